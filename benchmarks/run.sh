#!/bin/sh
# Builds the benchmarks jar and runs it. See docs/benchmarks.md.
#   benchmarks/run.sh            # everything: end-to-end + store micro-benchmarks -> benchmarks/target/results.md
#   benchmarks/run.sh e2e [--messages 200000 --rounds 3 --jdbc-url URL --jdbc-user U --jdbc-password P ...]
#   benchmarks/run.sh micro
# MVN_ARGS="-o" to build offline; SKIP_BUILD=1 to reuse benchmarks/target/acemq-benchmarks.jar.
set -e
cd "$(dirname "$0")/.."
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  mvn -B -q ${MVN_ARGS:-} -pl benchmarks -am package -DskipTests
fi
exec java -Xms1g -Xmx2g -XX:+UseG1GC -jar benchmarks/target/acemq-benchmarks.jar "$@"
