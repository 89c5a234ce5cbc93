package org.acemq.amqp.benchmarks.e2e;

/**
 * One timed consumption and what it cost.
 *
 * @param mode the row, e.g. {@code memory-4}
 * @param concurrency handler threads
 * @param messages messages consumed
 * @param nanos wall clock
 * @param clientCpu CPU time of the client JVM (user + system), -1 if unknown
 * @param brokerCpu CPU time of the broker JVM, -1 if unknown
 * @param client the client JVM's scheduler counters over the measurement
 * @param brokerSched the broker JVM's scheduler counters over the measurement
 * @param pgCpu CPU time of the store server's processes (PostgreSQL, MariaDB, redis-server), -1 if not measured
 * @param pgCommits transactions the database committed for the measurement (Redis: script calls), -1 if not
 *     measured
 * @param logSyncs a second server counter, -1 if not measured: MariaDB's redo log writes ({@code Innodb_log_writes}),
 *     Redis's commands including those its scripts ran ({@code total_commands_processed})
 */
record Sample(String mode, int concurrency, int messages, long nanos, long clientCpu, long brokerCpu,
              BenchEnv.Sched client, BenchEnv.Sched brokerSched, long pgCpu, long pgCommits, long logSyncs) {

    double rate() {
        return messages * 1e9 / nanos;
    }

    /** @return client + broker CPU µs per message (PostgreSQL excluded) */
    double cpuMicrosPerMsg() {
        return clientCpu < 0 || brokerCpu < 0 ? Double.NaN : (clientCpu + brokerCpu) / 1e3 / messages;
    }

    double clientMicrosPerMsg() {
        return clientCpu < 0 ? Double.NaN : clientCpu / 1e3 / messages;
    }

    double brokerMicrosPerMsg() {
        return brokerCpu < 0 ? Double.NaN : brokerCpu / 1e3 / messages;
    }

    double pgMicrosPerMsg() {
        return pgCpu < 0 ? Double.NaN : pgCpu / 1e3 / messages;
    }

    double commitsPerMsg() {
        return pgCommits < 0 ? Double.NaN : (double) pgCommits / messages;
    }

    double logSyncsPerMsg() {
        return logSyncs < 0 ? Double.NaN : (double) logSyncs / messages;
    }

    /** @return a copy with the commit count, known only once the measured pool is closed */
    Sample withCommits(long commits) {
        return withCommits(commits, -1);
    }

    /** @return a copy with the commit (Redis: script call) count and the second counter */
    Sample withCommits(long commits, long syncs) {
        return new Sample(mode, concurrency, messages, nanos, clientCpu, brokerCpu, client, brokerSched, pgCpu, commits,
                syncs);
    }

    /** Wall clock and CPU from {@link #start} to {@link #stop}: client JVM, broker JVM and, if given, PostgreSQL. */
    static final class Meter {
        private final ProcessHandle broker;
        private final BenchEnv.StoreServer postgres;
        private final long cpu0;
        private final long brokerCpu0;
        private final long pgCpu0;
        private final BenchEnv.Sched sched0;
        private final BenchEnv.Sched brokerSched0;
        private final long t0;

        private Meter(ProcessHandle broker, BenchEnv.StoreServer postgres) {
            this.broker = broker;
            this.postgres = postgres;
            this.cpu0 = BenchEnv.cpuNanos(ProcessHandle.current());
            this.brokerCpu0 = BenchEnv.cpuNanos(broker);
            this.pgCpu0 = postgres == null ? -1 : postgres.serverCpuNanos();
            this.sched0 = BenchEnv.Sched.of(ProcessHandle.current().pid());
            this.brokerSched0 = BenchEnv.Sched.of(broker.pid());
            this.t0 = System.nanoTime();
        }

        /**
         * @param broker the broker JVM
         * @param postgres the store server whose CPU to count too, or null
         * @return a running meter
         */
        static Meter start(ProcessHandle broker, BenchEnv.StoreServer postgres) {
            return new Meter(broker, postgres);
        }

        /** @return the sample from start until now (commits not yet known: -1) */
        Sample stop(String mode, int concurrency, int messages) {
            long nanos = System.nanoTime() - t0;
            long pgCpu = -1;
            if (postgres != null && pgCpu0 >= 0) {
                long now = postgres.serverCpuNanos();
                pgCpu = now < 0 ? -1 : now - pgCpu0;
            }
            return new Sample(mode, concurrency, messages, nanos, BenchEnv.cpuNanos(ProcessHandle.current()) - cpu0,
                    BenchEnv.cpuNanos(broker) - brokerCpu0,
                    BenchEnv.Sched.of(ProcessHandle.current().pid()).since(sched0),
                    BenchEnv.Sched.of(broker.pid()).since(brokerSched0), pgCpu, -1, -1);
        }
    }
}
