// franz: franz-go through kadmit, for tests/integration/test_matrix_clients.py.
//
//	franz create  BOOTSTRAP TOPIC PARTITIONS     -> RESULT OK | RESULT ERROR code=N text
//	franz produce BOOTSTRAP TOPIC COUNT          -> PRODUCED COUNT
//	franz consume BOOTSTRAP TOPIC GROUP COUNT    -> CONSUMED COUNT
//
// The rejection is printed as franz-go's kerr error shows it, with its code.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"kadmit.dev/tests/clients/cli"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func fail(format string, args ...any) { cli.Fail("franz", format, args...) }

func main() {
	a := cli.Parse("franz")
	seeds, topic := a.Bootstrap, a.Topic
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	switch a.Command {
	case "create":
		partitions := a.Int(0)
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
		if err != nil {
			fail("%v", err)
		}
		defer cl.Close()
		resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(partitions), 1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		var ke *kerr.Error
		switch {
		case err == nil:
			fmt.Println("RESULT OK")
		case errors.As(err, &ke):
			fmt.Printf("RESULT ERROR code=%d %s: %s\n", ke.Code, ke.Message, resp.ErrMessage)
		default:
			fail("create: %v", err)
		}
	case "produce":
		count := a.Int(0)
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic))
		if err != nil {
			fail("%v", err)
		}
		defer cl.Close()
		for i := 0; i < count; i++ {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("franz-%d", i))).FirstErr(); err != nil {
				fail("produce: %v", err)
			}
		}
		fmt.Printf("PRODUCED %d\n", count)
	case "consume":
		count := a.Int(1)
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
			kgo.ConsumerGroup(a.Rest[0]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			fail("%v", err)
		}
		defer cl.Close()
		got := 0
		for got < count {
			fetches := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				fail("consume: %d of %d records before the deadline", got, count)
			}
			fetches.EachError(func(t string, p int32, err error) { fail("consume %s/%d: %v", t, p, err) })
			got += fetches.NumRecords()
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			fail("commit: %v", err)
		}
		fmt.Printf("CONSUMED %d\n", got)
	default:
		fail("unknown command %s", a.Command)
	}
}
