// sarama: IBM/sarama through kadmit, for tests/integration/test_matrix_clients.py.
//
//	sarama create  BOOTSTRAP TOPIC PARTITIONS     -> RESULT OK | RESULT ERROR code=N text
//	sarama produce BOOTSTRAP TOPIC COUNT          -> PRODUCED COUNT
//	sarama consume BOOTSTRAP TOPIC GROUP COUNT    -> CONSUMED COUNT
//
// The rejection is printed as sarama's TopicError shows it, with its KError code.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"kadmit.dev/tests/clients/cli"

	"github.com/IBM/sarama"
)

func fail(format string, args ...any) { cli.Fail("sarama", format, args...) }

type handler struct {
	want, got int
	done      chan struct{}
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		s.MarkMessage(m, "")
		h.got++
		if h.got == h.want {
			s.Commit()
			close(h.done)
			return nil
		}
	}
	return nil
}

func main() {
	a := cli.Parse("sarama")
	addrs, topic := a.Bootstrap, a.Topic
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Admin.Timeout = 30 * time.Second
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	switch a.Command {
	case "create":
		partitions := a.Int(0)
		admin, err := sarama.NewClusterAdmin(addrs, cfg)
		if err != nil {
			fail("%v", err)
		}
		defer admin.Close()
		err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: int32(partitions), ReplicationFactor: 1}, false)
		var te *sarama.TopicError
		switch {
		case err == nil:
			fmt.Println("RESULT OK")
		case errors.As(err, &te):
			fmt.Printf("RESULT ERROR code=%d %s\n", int16(te.Err), te.Error())
		default:
			fail("create: %v", err)
		}
	case "produce":
		count := a.Int(0)
		p, err := sarama.NewSyncProducer(addrs, cfg)
		if err != nil {
			fail("%v", err)
		}
		defer p.Close()
		for i := 0; i < count; i++ {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("sarama-%d", i))}); err != nil {
				fail("produce: %v", err)
			}
		}
		fmt.Printf("PRODUCED %d\n", count)
	case "consume":
		count := a.Int(1)
		g, err := sarama.NewConsumerGroup(addrs, a.Rest[0], cfg)
		if err != nil {
			fail("%v", err)
		}
		defer g.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		h := &handler{want: count, done: make(chan struct{})}
		go func() {
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
					fail("consume: %v", err)
				}
			}
		}()
		select {
		case <-h.done:
		case <-ctx.Done():
			fail("consume: %d of %d records before the deadline", h.got, count)
		}
		fmt.Printf("CONSUMED %d\n", h.got)
	default:
		fail("unknown command %s", a.Command)
	}
}
