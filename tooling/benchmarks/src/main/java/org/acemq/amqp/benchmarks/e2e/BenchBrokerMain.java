package org.acemq.amqp.benchmarks.e2e;

import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.apache.activemq.artemis.core.config.Configuration;

/**
 * The benchmark's broker JVM: {@link EmbeddedArtemis} with or without its journal, which prints the journal
 * settings it really runs with, read back from the started server, before {@code READY port=N}.
 *
 * <pre>
 * java -Djava.io.tmpdir=DIR -cp acemq-benchmarks.jar org.acemq.amqp.benchmarks.e2e.BenchBrokerMain true|false [N]
 * </pre>
 *
 * {@code N}: the broker's delivery attempts before it dead-letters a message (default: {@link EmbeddedArtemis}'s);
 * a run whose handlers fail on purpose sets it above the subscription's own limit.
 *
 * The journal goes to a new directory under {@code java.io.tmpdir}, deleted when the broker stops (SIGTERM), so the
 * harness chooses the disk with {@code -Djava.io.tmpdir}. Stdout: one {@code CONFIG ...} line, then
 * {@code READY port=N}.
 */
public final class BenchBrokerMain {

    private BenchBrokerMain() {
    }

    /**
     * @param args {@code true} for a persistent journal, {@code false} for memory only; then, optionally, the
     *     broker's delivery attempts
     * @throws InterruptedException if interrupted while running
     */
    public static void main(String[] args) throws InterruptedException {
        if (args.length < 1 || args.length > 2 || !(args[0].equals("true") || args[0].equals("false"))) {
            System.err.println("usage: BenchBrokerMain true|false [maxDeliveryAttempts]   (persistent journal or not)");
            System.exit(2);
            return;
        }
        EmbeddedArtemis.Builder builder = EmbeddedArtemis.builder().persistent(Boolean.parseBoolean(args[0]));
        if (args.length == 2) {
            builder.maxDeliveryAttempts(Integer.parseInt(args[1]));
        }
        EmbeddedArtemis broker = builder.build();
        // SIGTERM runs the hook, which stops the broker (and deletes its temporary journal) before the JVM exits
        Runtime.getRuntime().addShutdownHook(new Thread(broker::close, "bench-broker-shutdown"));
        broker.start();
        Configuration c = broker.server().getConfiguration();
        // Artemis's own defaults, not changed by EmbeddedArtemis: printed so the report shows what really ran
        System.out.println(!c.isPersistenceEnabled() ? "CONFIG persistence=false (no journal: messages in memory only)"
                : "CONFIG persistence=true"
                + " journal-type=" + c.getJournalType()
                + " journal-sync-transactional=" + c.isJournalSyncTransactional()
                + " journal-sync-non-transactional=" + c.isJournalSyncNonTransactional()
                + " journal-datasync=" + c.isJournalDatasync()
                + " journal-buffer-timeout-ns=" + c.getJournalBufferTimeout_NIO()
                + " journal-dir=" + c.getJournalLocation().getAbsolutePath());
        System.out.println("READY port=" + broker.port());
        System.out.flush();
        Thread.currentThread().join(); // until the JVM is told to stop
    }
}
