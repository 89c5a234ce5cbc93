package org.acemq.amqp.samples.boot;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.spring.AcemqProperties;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.core.env.Environment;
import org.springframework.stereotype.Component;

/**
 * Runs once the application (and so the consumer) has started: publishes the order workload, waits until every
 * order has been settled for good, and prints the verdict from the listener's recorded effects and the consumer's
 * meters in the application's own MeterRegistry.
 */
@Component
class OrdersDemo implements ApplicationRunner {

    private static final String RULE = " " + "-".repeat(78);
    private static final int MAX_ATTEMPTS = 5;
    private static final java.time.Duration DLQ_WAIT = java.time.Duration.ofSeconds(10);

    private final DemoProperties demo;
    private final OrderListener listener;
    private final MeterRegistry meters;
    private final AcemqProperties acemq;
    private final ObjectProvider<EmbeddedArtemis> embedded;
    private final Environment environment;
    private final CompletableFuture<Verdict> verdict = new CompletableFuture<>();
    private final PrintStream out = System.out;

    OrdersDemo(DemoProperties demo, OrderListener listener, MeterRegistry meters, AcemqProperties acemq,
            ObjectProvider<EmbeddedArtemis> embedded, Environment environment) {
        this.demo = demo;
        this.listener = listener;
        this.meters = meters;
        this.acemq = acemq;
        this.embedded = embedded;
        this.environment = environment;
    }

    /** The outcome of the run, in numbers. */
    record Verdict(int published, int exactlyOnce, int expectedExactlyOnce, long duplicates, int expectedDuplicates,
                   long retried, int expectedRetried, long poison, int expectedPoison, long inDlq, int lost,
                   int twice, double seconds, boolean completed) {

        boolean pass() {
            return completed && lost == 0 && twice == 0 && exactlyOnce == expectedExactlyOnce
                    && duplicates == expectedDuplicates && retried == expectedRetried && poison == expectedPoison
                    && (inDlq < 0 || inDlq == expectedPoison);
        }
    }

    /** @return the verdict, once the run is over */
    CompletableFuture<Verdict> verdict() {
        return verdict;
    }

    @Override
    public void run(ApplicationArguments args) {
        try {
            verdict.complete(execute());
        } catch (RuntimeException | Error e) {
            verdict.completeExceptionally(e);
            throw e;
        }
    }

    private Verdict execute() {
        String queue = demo.queue();
        EmbeddedArtemis broker = embedded.getIfAvailable();
        Plan plan = Plan.create(demo);
        out.println(" AceMQ consumer Spring Boot sample: " + plan.orders.size() + " orders (" + plan.duplicates
                + " duplicated, " + plan.transients + " failing once, " + plan.poison + " poison) to '" + queue
                + "' on " + (broker != null ? "embedded Artemis " + broker.host() + ":" + broker.port()
                        : acemq.getConnection().getHost() + ":" + acemq.getConnection().getPort())
                + ", store " + acemq.getStore().getType().name().toLowerCase(Locale.ROOT));
        String port = environment.getProperty("local.server.port");
        if (port != null) {
            out.println(" health:     http://localhost:" + port + "/actuator/health");
            out.println(" prometheus: http://localhost:" + port + "/actuator/prometheus");
        }
        long start = System.nanoTime();
        try (AmqpTestClient client = broker != null ? AmqpTestClient.connect(broker)
                : acemq.getConnection().getUsername() != null
                        ? AmqpTestClient.connect(acemq.getConnection().getHost(), acemq.getConnection().getPort(),
                                acemq.getConnection().getUsername(), acemq.getConnection().getPassword())
                        : AmqpTestClient.connect(acemq.getConnection().getHost(), acemq.getConnection().getPort())) {
            client.send(queue, plan.messages);
        }
        long deadline = start + demo.timeout().toNanos();
        boolean completed;
        while (true) {
            completed = settledForGood(queue) >= plan.messages.size() && listener.effects().size() >= plan.healthy()
                    && count("acemq.consumer.poison", queue) >= plan.poison;
            if (completed || System.nanoTime() - deadline >= 0) {
                break;
            }
            sleep(20);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        int exactlyOnce = 0;
        int twice = 0;
        for (AtomicInteger n : listener.effects().values()) {
            exactlyOnce += n.get() == 1 ? 1 : 0;
            twice += n.get() > 1 ? 1 : 0;
        }
        long inDlq = -1;
        if (broker != null) { // the broker moves a rejected message to the dead-letter queue asynchronously
            long dlqDeadline = System.nanoTime() + DLQ_WAIT.toNanos();
            while ((inDlq = broker.messageCount(EmbeddedArtemis.deadLetterQueueName(queue))) < plan.poison
                    && completed && System.nanoTime() - dlqDeadline < 0) {
                sleep(20);
            }
        }
        Verdict v = new Verdict(plan.messages.size(), exactlyOnce, plan.healthy(),
                count("acemq.consumer.deliveries", queue, "reason", "duplicate"), plan.duplicates,
                count("acemq.consumer.deliveries", queue, "outcome", "modified"),
                plan.transients + plan.poison * (MAX_ATTEMPTS - 1), count("acemq.consumer.poison", queue),
                plan.poison, inDlq, plan.healthy() - listener.effects().size(), twice, seconds, completed);
        print(v, queue);
        return v;
    }

    private long settledForGood(String queue) {
        return count("acemq.consumer.deliveries", queue, "outcome", "accepted")
                + count("acemq.consumer.deliveries", queue, "outcome", "rejected");
    }

    private long count(String meter, String queue, String... tags) {
        List<String> all = new ArrayList<>(List.of("subscription", queue));
        all.addAll(List.of(tags));
        double sum = 0;
        for (Counter c : meters.find(meter).tags(all.toArray(String[]::new)).counters()) {
            sum += c.count();
        }
        return Math.round(sum);
    }

    private void print(Verdict v, String queue) {
        out.println(RULE);
        out.printf(Locale.ROOT, " %-36s %12s %12s%n", "", "actual", "expected");
        row("published (incl. duplicates)", v.published(), v.published(), "");
        row("processed exactly once", v.exactlyOnce(), v.expectedExactlyOnce(), "");
        row("duplicates absorbed", v.duplicates(), v.expectedDuplicates(), "acemq.consumer.deliveries{reason=duplicate}");
        row("retried after a handler failure", v.retried(), v.expectedRetried(),
                "failing once + poison x " + (MAX_ATTEMPTS - 1));
        row("dead-lettered (poison)", v.poison(), v.expectedPoison(),
                v.inDlq() >= 0 ? v.inDlq() + " in " + EmbeddedArtemis.deadLetterQueueName(queue) : "");
        row("lost", v.lost(), 0, "");
        row("processed twice", v.twice(), 0, "");
        out.printf(Locale.ROOT, " %-36s %12s %12s   %s%n", "throughput",
                String.format(Locale.ROOT, "%,.0f msg/s", v.published() / Math.max(1e-3, v.seconds())), "",
                String.format(Locale.ROOT, "%,d messages in %.2f s", v.published(), v.seconds()));
        out.println(RULE);
        out.println(v.pass() ? " VERDICT: PASS - every order processed exactly once, poison dead-lettered"
                : " VERDICT: FAIL - " + (v.completed() ? "the numbers above differ from the expected ones"
                        : "the run did not complete within demo.timeout=" + demo.timeout()));
    }

    private void row(String label, long actual, long expected, String note) {
        String line = String.format(Locale.ROOT, " %-36s %,12d %,12d   %s", label, actual, expected, note);
        out.println(line.stripTrailing());
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** The workload, planned from the seed so that every expected number is exact. */
    static final class Plan {
        final List<String> orders = new ArrayList<>();
        final List<AmqpTestClient.MessageSpec> messages = new ArrayList<>();
        int duplicates;
        int transients;
        int poison;

        int healthy() {
            return orders.size() - poison;
        }

        static Plan create(DemoProperties demo) {
            Plan plan = new Plan();
            Random random = new Random(demo.seed());
            String run = Long.toHexString(random.nextLong() & 0xffffffL);
            List<Integer> shuffled = new ArrayList<>();
            for (int i = 0; i < demo.orders(); i++) {
                shuffled.add(i);
                plan.orders.add("order-" + run + "-" + i);
            }
            Collections.shuffle(shuffled, random);
            plan.poison = Math.min(demo.poison(), demo.orders());
            int transients = (int) Math.round(demo.transientShare() * demo.orders());
            int duplicates = (int) Math.round(demo.duplicateShare() * demo.orders());
            String[] fault = new String[demo.orders()];
            boolean[] duplicated = new boolean[demo.orders()];
            int next = 0;
            for (; next < plan.poison; next++) {
                fault[shuffled.get(next)] = "poison";
            }
            for (int i = 0; i < transients && next < shuffled.size(); i++, next++) {
                fault[shuffled.get(next)] = "transient";
                plan.transients++;
            }
            // duplicates among the healthy orders (poison is never duplicated, so every number has one cause)
            for (int i = plan.poison; i < shuffled.size() && plan.duplicates < duplicates; i++) {
                duplicated[shuffled.get(i)] = true;
                plan.duplicates++;
            }
            List<AmqpTestClient.MessageSpec> copies = new ArrayList<>();
            for (int i = 0; i < demo.orders(); i++) {
                AmqpTestClient.MessageSpec m = message(plan.orders.get(i), i, fault[i]);
                plan.messages.add(m);
                if (duplicated[i]) {
                    copies.add(message(plan.orders.get(i), i, fault[i])); // a publisher's retry: same message-id
                }
            }
            plan.messages.addAll(copies);
            return plan;
        }

        private static AmqpTestClient.MessageSpec message(String id, int n, String fault) {
            String json = "{\"id\":\"" + id + "\",\"sku\":\"sku-" + (n % 97) + "\",\"quantity\":" + (1 + n % 5)
                    + ",\"fault\":" + (fault == null ? "null" : "\"" + fault + "\"") + "}";
            return AmqpTestClient.message(id, json);
        }
    }
}
