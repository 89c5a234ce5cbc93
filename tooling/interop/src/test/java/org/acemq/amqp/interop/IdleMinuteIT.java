package org.acemq.amqp.interop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.interop.Ledger.Books;
import org.acemq.amqp.interop.Ledger.Kind;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An idle minute on every broker at once (one minute of CI time for all of them): a consumer with default settings
 * handles a first batch, then sits on its empty queue for a minute while its health is sampled every 200 ms, then
 * handles a second batch. Over that minute it must not lose its connection (counted by the observer's
 * {@code connectionInterrupted}, the events behind {@code acemq.consumer.connection.interruptions}) and
 * {@code health()} must say healthy (running, connected, store reachable, link attached) in every sample.
 */
class IdleMinuteIT {

    static final Duration IDLE = Duration.ofMinutes(1);
    static final Duration SAMPLE_EVERY = Duration.ofMillis(200);
    static final int BATCH = 10;

    @Test
    @Timeout(value = 6, unit = TimeUnit.MINUTES)
    void anIdleMinuteCausesNoReconnectAndHealthStaysHealthy() throws Exception {
        Map<String, Watch> watches = new LinkedHashMap<>();
        SoftAssertions soft = new SoftAssertions();
        ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor();
        try {
            for (String name : Brokers.NAMES) {
                try {
                    Watch w = new Watch(ScenarioRun.of(Brokers.byName(name), "idle"));
                    watches.put(name, w);
                    w.run.startConsumer();
                    w.run.publish(w.run.ledger.newMessages(BATCH, Kind.NORMAL));
                } catch (RuntimeException | AssertionError e) {
                    soft.fail(name + ": could not start the scenario: " + e.getMessage());
                    Watch w = watches.remove(name);
                    if (w != null) {
                        w.run.close();
                    }
                }
            }
            for (Watch w : watches.values()) {
                ScenarioRun.awaitQuietly(ScenarioRun.PROCESSING_WAIT, w.run.ledger::allSucceeded);
                w.interruptionsBefore = w.run.tally.interruptions();
            }

            CountDownLatch minuteOver = new CountDownLatch(1);
            long end = System.nanoTime() + IDLE.toNanos();
            sampler.scheduleAtFixedRate(() -> {
                watches.values().forEach(Watch::sample);
                if (System.nanoTime() >= end) {
                    minuteOver.countDown();
                }
            }, 0, SAMPLE_EVERY.toMillis(), TimeUnit.MILLISECONDS);
            if (!minuteOver.await(IDLE.plusSeconds(30).toMillis(), TimeUnit.MILLISECONDS)) {
                soft.fail("the sampler did not finish the minute");
            }
            sampler.shutdownNow();

            for (Watch w : watches.values()) {
                w.interruptionsDuring = w.run.tally.interruptions() - w.interruptionsBefore;
                try {
                    w.run.publish(w.run.ledger.newMessages(BATCH, Kind.NORMAL));
                } catch (RuntimeException e) {
                    soft.fail(w.run.broker.name() + ": publishing after the idle minute failed: " + e.getMessage());
                }
            }
            for (Watch w : watches.values()) {
                ScenarioRun.awaitQuietly(ScenarioRun.PROCESSING_WAIT, w.run.ledger::allSucceeded);
                ScenarioRun.awaitQuietly(ScenarioRun.SETTLE_WAIT, w.run::settled);
            }

            for (Map.Entry<String, Watch> e : watches.entrySet()) {
                Watch w = e.getValue();
                Books books = w.run.ledger.books();
                List<String> problems = new ArrayList<>();
                if (w.interruptionsDuring != 0) {
                    problems.add(w.interruptionsDuring + " connection interruption(s) during the idle minute");
                }
                if (w.unhealthy != 0) {
                    problems.add(w.unhealthy + " of " + w.samples + " health() samples not healthy");
                }
                if (w.samples < IDLE.toMillis() / SAMPLE_EVERY.toMillis() / 2) {
                    problems.add("only " + w.samples + " health samples taken");
                }
                if (!books.lost().isEmpty() || !books.processedTwice().isEmpty() || books.handledOnce() != 2 * BATCH) {
                    problems.add("lost " + books.lost().size() + ", processed twice " + books.processedTwice().size()
                            + ", handled once " + books.handledOnce() + " of " + 2 * BATCH
                            + " (a batch before and a batch after the minute)");
                }
                soft.assertThat(problems).as("%s: after an idle minute%s%n  idle:     %s", e.getKey(), w.run.report(),
                        w.describe()).isEmpty();
            }
        } finally {
            sampler.shutdownNow();
            watches.values().forEach(w -> w.run.close());
        }
        soft.assertAll();
    }

    /** One broker's consumer over the idle minute. */
    private static final class Watch {
        final ScenarioRun run;
        final List<String> firstUnhealthy = new ArrayList<>();
        final long start = System.nanoTime();
        int interruptionsBefore;
        int interruptionsDuring;
        volatile int samples;
        volatile int unhealthy;

        Watch(ScenarioRun run) {
            this.run = run;
        }

        void sample() {
            samples++;
            try {
                ConsumerHealth h = run.consumer().health();
                if (!h.healthy()) {
                    unhealthy++;
                    note(h.toString());
                }
            } catch (RuntimeException e) {
                unhealthy++;
                note("health() threw " + e);
            }
        }

        private void note(String what) {
            if (firstUnhealthy.size() < 3) {
                firstUnhealthy.add("at +" + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + " ms: " + what);
            }
        }

        String describe() {
            return samples + " health samples, " + unhealthy + " not healthy" + (firstUnhealthy.isEmpty() ? ""
                    : ", first: " + String.join("; ", firstUnhealthy)) + "; connection interruptions during the minute "
                    + interruptionsDuring;
        }
    }
}
