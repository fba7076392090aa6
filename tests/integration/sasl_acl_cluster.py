"""A KRaft cluster whose CLIENT listener takes SCRAM-SHA-512 and whose brokers run Kafka's
StandardAuthorizer with allow.everyone.if.no.acl.found=false. User:ANONYMOUS (the plaintext
DIRECT, INTERNAL and CONTROLLER listeners: the brokers themselves) and User:admin are super users;
every other user has only the ACLs a test grants. Used by test_kip578_configs.py and
test_partial_view.py.
"""

from __future__ import annotations

from pathlib import Path

from kafka_cluster import KafkaCluster


class SaslAclCluster(KafkaCluster):
    """The base cluster with SCRAM on CLIENT (a user per entry of `users`) and StandardAuthorizer."""

    def __init__(self, directory: Path, port_base_: int, users: dict[str, str], brokers: int = 3):
        super().__init__(directory, brokers=brokers, port_base_=port_base_)
        for user, pw in users.items():
            self.format_args += ["--add-scram", f"SCRAM-SHA-512=[name={user},password={pw}]"]

    def write_configs(self) -> None:
        super().write_configs()
        for n in self.nodes:
            text = n.config.read_text().replace("CLIENT:PLAINTEXT", "CLIENT:SASL_PLAINTEXT")
            text += "".join(f"{k}={v}\n" for k, v in {
                "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "listener.name.client.scram-sha-512.sasl.jaas.config":
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "authorizer.class.name":
                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": "User:ANONYMOUS;User:admin",
                "allow.everyone.if.no.acl.found": "false",
            }.items())
            n.config.write_text(text)
