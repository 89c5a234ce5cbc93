#!/bin/sh
# Builds the benchmarks jar (reactor build of the modules it needs, no `mvn install`) and runs it.
# See docs/benchmarks.md.
#   tooling/benchmarks/run.sh e2e        # the full run: durable + non-durable throughput with the peer rows,
#                                #   latency at half load, IO-bound -> tooling/benchmarks/target/e2e-results.md
#   tooling/benchmarks/run.sh            # that plus the store micro-benchmarks -> tooling/benchmarks/target/results.md
#   tooling/benchmarks/run.sh micro      # store micro-benchmarks only
#   tooling/benchmarks/run.sh sustained  # 1,000,000 messages, JDBC store defaults on durable PostgreSQL, purge running,
#                                #   msg/s per 100,000 -> tooling/benchmarks/target/sustained-results.md, sustained.png
#   tooling/benchmarks/run.sh ordered    # ordered per key against unordered (1,000 keys x 20, concurrency 16, 0-5 ms
#                                #   handler, 10 % transient failures) and a hot key with half the traffic
#                                #   -> tooling/benchmarks/target/ordered-results.md (--rounds, --keys, --parked-limits)
#   tooling/benchmarks/run.sh scaleout   # 1, 2 and 4 consumer JVMs (4 handler threads each) on one queue and one store,
#                                #   per store (postgres, mariadb, redis, redis-cluster), durable broker, CPU per process
#                                #   -> tooling/benchmarks/target/scaleout-results.md (--stores, --processes,
#                                #   --messages N or store=N,..., --rounds, --warmup)
# Short runs:
#   tooling/benchmarks/run.sh e2e --durability durable --only throughput            # only the durable rows
#   tooling/benchmarks/run.sh e2e --durability durable --modes spring --only throughput   # raw baselines + one peer
#   (--modes takes rows or groups: memory, spring, camel, postgres, peers, mariadb, redis, redis-cluster, stores,
#    batch, send; --messages/--pg-messages/--rounds)
#   tooling/benchmarks/run.sh e2e --durability durable --modes batch --only throughput   # batch handler (100 per call)
#                                #   beside single-message handling, JdbcIdempotencyStore defaults on durable PostgreSQL
#   tooling/benchmarks/run.sh e2e --durability durable --modes send --only throughput   # one send per message
#                                #   (JdbcTransactionalHandler + outbox; plain handler, direct send) beside consume only
#   tooling/benchmarks/run.sh e2e --durability durable --modes postgres-default-4,camel-jdbc-4,stores --only throughput \
#       --messages 50000 --pg-messages 20000     # every store's row (MariaDB, Redis, Redis Cluster 1 and 3 masters)
#   tooling/benchmarks/run.sh e2e --durability durable --modes memory,postgres --only throughput --fingerprint on,off
#                                #   every AceMQ row with the fingerprint on (default) and off, compared round by round
# MVN_ARGS="-o" to build offline; SKIP_BUILD=1 to reuse tooling/benchmarks/target/acemq-benchmarks.jar.
set -e
cd "$(dirname "$0")/../.."
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  mvn -B -q ${MVN_ARGS:-} -pl tooling/benchmarks -am package -DskipTests
fi
exec java -Xms1g -Xmx2g -XX:+UseG1GC -jar tooling/benchmarks/target/acemq-benchmarks.jar "$@"
