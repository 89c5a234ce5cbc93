package org.acemq.amqp.interop;

import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.interop.InteropBroker.TestQueue;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * One scenario run on one broker: its queue, its handler books ({@link Ledger}), what the consumer reported
 * ({@link RecordingObserver}), the idempotency store that outlives consumer restarts (as a database would), and the
 * consumer, which is always built with nothing but the broker's connection settings, the store, the observer and the
 * address: every consumer and subscription setting is the default.
 *
 * <p>Also the waiting helpers and bounds every scenario shares. A bound is how long the suite waits for something
 * that should happen; when it passes, the scenario asserts and reports exactly what did happen.
 */
final class ScenarioRun implements AutoCloseable {

    /** How long a consumer may take to connect and attach. */
    static final Duration ATTACH_WAIT = Duration.ofSeconds(30);
    /** How long the messages of a scenario may take to be handled (a few hundred at most). */
    static final Duration PROCESSING_WAIT = Duration.ofSeconds(30);
    /**
     * How long the messages may take after a broker restart: the restart itself (a RabbitMQ node took up to 25 s on a
     * loaded 2-core machine) plus the default reconnect back-off, which doubles from 100 ms up to 30 s.
     */
    static final Duration RESTART_WAIT = Duration.ofSeconds(120);
    /** How long the broker may take to show the final state (settlements and dead-lettering are asynchronous). */
    static final Duration SETTLE_WAIT = Duration.ofSeconds(10);
    /** How long dead letters may take to arrive. */
    static final Duration DEAD_LETTER_WAIT = Duration.ofSeconds(10);

    final InteropBroker broker;
    final TestQueue queue;
    final Ledger ledger;
    final RecordingObserver tally = new RecordingObserver();
    final IdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
    private final LogWindow consumerLog = LogWindow.suiteLog(LogWindow.CONSUMER_PROBLEM);
    private volatile AmqpConsumer consumer;

    private ScenarioRun(InteropBroker broker, String scenario) {
        this.broker = broker;
        this.queue = broker.newQueue(scenario);
        this.ledger = new Ledger(queue.name());
    }

    /** A new run of {@code scenario} on {@code broker}, with a queue of its own. */
    static ScenarioRun of(InteropBroker broker, String scenario) {
        return new ScenarioRun(broker, scenario);
    }

    /**
     * Starts a consumer with default settings and waits until {@link ConsumerHealth#healthy()}.
     *
     * @throws AssertionError if it is not healthy within {@link #ATTACH_WAIT}
     */
    AmqpConsumer startConsumer() {
        return startConsumer(Subscription.builder(queue.address(), ledger).build());
    }

    /**
     * Starts a consumer with default consumer settings and this subscription (for the few scenarios that are about a
     * subscription setting), and waits until {@link ConsumerHealth#healthy()}.
     *
     * @throws AssertionError if it is not healthy within {@link #ATTACH_WAIT}
     */
    AmqpConsumer startConsumer(Subscription subscription) {
        AmqpConsumer c = AmqpConsumer.builder()
                .connection(broker.connection())
                .store(store)
                .observer(tally)
                .subscribe(subscription)
                .start();
        consumer = c;
        if (!awaitQuietly(ATTACH_WAIT, () -> c.health().healthy())) {
            throw new AssertionError("the consumer did not become healthy within " + ATTACH_WAIT + "\n" + report());
        }
        return c;
    }

    /** @return the consumer started last, or null */
    AmqpConsumer consumer() {
        return consumer;
    }

    /** Publishes the messages and counts them. */
    void publish(List<MessageSpec> messages) {
        broker.publish(queue, messages);
        ledger.countPublished(messages.size());
    }

    /** @return whether the broker holds nothing for the queue and the consumer holds no delivery */
    boolean settled() {
        AmqpConsumer c = consumer;
        boolean consumerIdle = c == null || c.health().subscriptions().stream().allMatch(s -> s.inFlight() == 0);
        return consumerIdle && broker.messagesLeft(queue) == 0;
    }

    /** Everything known about the run, for assertion messages. */
    String report() {
        StringBuilder sb = new StringBuilder();
        sb.append("\n  broker:   ").append(broker.name()).append(": ").append(broker.description());
        sb.append("\n  queue:    ").append(queue.name()).append(" (address ").append(queue.address()).append(")");
        sb.append("\n  books:    ").append(ledger.books());
        sb.append("\n  consumer: ").append(tally);
        AmqpConsumer c = consumer;
        if (c != null) {
            sb.append("\n  health:   ").append(c.health());
        }
        try {
            sb.append("\n  left:     ").append(broker.messagesLeft(queue)).append(" message(s) held by the broker");
        } catch (RuntimeException e) {
            sb.append("\n  left:     unknown (").append(e.getMessage()).append(")");
        }
        List<String> problems = consumerLog.problems();
        sb.append("\n  log:      ").append(problems.size()).append(" WARN/ERROR line(s) from the consumer and client");
        problems.stream().limit(8).forEach(l -> sb.append("\n            ").append(l));
        return sb.toString();
    }

    @Override
    public void close() {
        AmqpConsumer c = consumer;
        if (c != null) {
            c.close(Duration.ofSeconds(10));
        }
    }

    /**
     * Polls {@code condition} every 50 ms until it holds or {@code limit} passes; exceptions count as "not yet".
     *
     * @return whether it held
     */
    static boolean awaitQuietly(Duration limit, BooleanSupplier condition) {
        try {
            Awaitility.await().atMost(limit).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(50))
                    .ignoreExceptions().until(condition::getAsBoolean);
            return true;
        } catch (ConditionTimeoutException e) {
            return false;
        }
    }
}
