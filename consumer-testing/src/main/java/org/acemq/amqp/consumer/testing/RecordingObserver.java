package org.acemq.amqp.consumer.testing;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SendPath;
import org.acemq.amqp.consumer.SendResult;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;

/**
 * A {@link ConsumerObserver} that writes down everything a consumer reports, for a test to assert on: each settlement
 * with its subscription, key, outcome and reason; each answer of the store to a claim and each claim that failed;
 * conflicts, abandoned deliveries and dropped dispositions; handler runs and the scopes they closed with; store calls;
 * messages sent; pauses and connection interruptions.
 *
 * <pre>{@code
 * RecordingObserver observed = new RecordingObserver();
 * AmqpConsumer consumer = AmqpConsumer.builder()...observer(observed)...start();
 * // send "order-1" twice, then:
 * observed.await(o -> o.settlements().size() == 2, Duration.ofSeconds(30)); // true once both are settled
 * observed.count(Outcome.ACCEPTED, SettleReason.DUPLICATE);                 // 1
 * }</pre>
 *
 * <p>{@link #await} waits for a condition on what was recorded without polling or sleeping; the accessors also work
 * with any polling helper (Awaitility's {@code await().until(() -> ...)}).
 *
 * <p>Give it another observer ({@link #RecordingObserver(ConsumerObserver)}, for example a {@code MicrometerObserver})
 * and every event is passed on to it after being recorded, so a test can read the meters too.
 *
 * <p><b>Threading:</b> thread-safe: the runtime calls it from several threads at once, and the accessors may be read
 * from the test's thread meanwhile. Every list accessor returns a copy taken at the call (later events do not change
 * it), in the order the events were reported.
 */
public final class RecordingObserver implements ConsumerObserver {

    /**
     * A delivery settled with the broker.
     *
     * @param subscription the subscription's name
     * @param key the message's store key ({@code scope|key}), or null when it had none
     * @param outcome the AMQP outcome
     * @param reason why
     */
    public record Settlement(String subscription, String key, Outcome outcome, SettleReason reason) {
    }

    /**
     * The same key arrived with other content.
     *
     * @param subscription the subscription's name
     * @param key the store key
     * @param recordedFingerprint the fingerprint the store holds
     * @param fingerprint the copy's fingerprint
     */
    public record Conflict(String subscription, String key, String recordedFingerprint, String fingerprint) {
    }

    /**
     * A store call finished.
     *
     * @param operation which call
     * @param nanos how long it took, as the runtime measured it
     * @param success whether it succeeded
     * @param keys how many keys it covered (more than one for a batched call)
     */
    public record StoreCall(StoreOperation operation, long nanos, boolean success, int keys) {
    }

    /**
     * A handler returned or threw.
     *
     * @param subscription the subscription's name
     * @param nanos how long it ran
     * @param success whether it returned normally
     */
    public record Handled(String subscription, long nanos, boolean success) {
    }

    /**
     * A handler's scope ({@link ConsumerObserver#handlerStarting}) closed.
     *
     * @param subscription the subscription's name
     * @param key the message's store key as the handler saw it ({@link Envelope#id()})
     * @param outcome the outcome it closed with; null when the delivery was abandoned
     * @param reason the reason; null when the delivery was abandoned
     * @param failure what the handler threw, or null
     */
    public record Scope(String subscription, String key, Outcome outcome, SettleReason reason, Throwable failure) {
    }

    /**
     * A message a handler sent was sent, or its send failed.
     *
     * @param path how it was sent
     * @param result what the broker made of it
     * @param nanos how long until its outcome was known, as the runtime measured it
     */
    public record Sent(SendPath path, SendResult result, long nanos) {
    }

    private final ConsumerObserver next;
    /** The monitor {@link #await} waits on; notified after each event is recorded. */
    private final Object events = new Object();
    private final List<Settlement> settlements = new CopyOnWriteArrayList<>();
    private final List<String> endings = new CopyOnWriteArrayList<>();
    private final List<ClaimResult> claims = new CopyOnWriteArrayList<>();
    private final AtomicInteger claimFailures = new AtomicInteger();
    private final List<Conflict> conflicts = new CopyOnWriteArrayList<>();
    private final AtomicInteger abandoned = new AtomicInteger();
    private final AtomicInteger dropped = new AtomicInteger();
    private final List<Handled> handled = new CopyOnWriteArrayList<>();
    private final List<Scope> scopes = new CopyOnWriteArrayList<>();
    private final List<StoreCall> storeCalls = new CopyOnWriteArrayList<>();
    private final List<Sent> sends = new CopyOnWriteArrayList<>();
    private final AtomicInteger bypassed = new AtomicInteger();
    private final List<Boolean> pauses = new CopyOnWriteArrayList<>();
    private final List<Boolean> connectionChanges = new CopyOnWriteArrayList<>();

    /** An observer that records and passes nothing on. */
    public RecordingObserver() {
        this(ConsumerObserver.NOOP);
    }

    /**
     * @param next the observer every event is passed on to after it was recorded (its handler scopes too)
     */
    public RecordingObserver(ConsumerObserver next) {
        this.next = Objects.requireNonNull(next, "next");
    }

    // ---- what the runtime calls -------------------------------------------------------------------------------

    @Override
    public void claim(String subscription, ClaimResult result) {
        claims.add(result);
        changed();
        next.claim(subscription, result);
    }

    @Override
    public void claimFailed(String subscription) {
        claimFailures.incrementAndGet();
        changed();
        next.claimFailed(subscription);
    }

    @Override
    public void settled(String subscription, String messageKey, Outcome outcome, SettleReason reason) {
        settlements.add(new Settlement(subscription, messageKey, outcome, reason));
        endings.add(outcome + "/" + reason);
        changed();
        next.settled(subscription, messageKey, outcome, reason);
    }

    @Override
    public void conflict(String subscription, String messageKey, String recordedFingerprint, String fingerprint) {
        conflicts.add(new Conflict(subscription, messageKey, recordedFingerprint, fingerprint));
        changed();
        next.conflict(subscription, messageKey, recordedFingerprint, fingerprint);
    }

    @Override
    public void abandoned(String subscription) {
        abandoned.incrementAndGet();
        endings.add("abandoned");
        changed();
        next.abandoned(subscription);
    }

    @Override
    public void dispositionDropped(String subscription) {
        dropped.incrementAndGet();
        endings.add("dropped");
        changed();
        next.dispositionDropped(subscription);
    }

    @Override
    public void handled(String subscription, long nanos, boolean success) {
        handled.add(new Handled(subscription, nanos, success));
        changed();
        next.handled(subscription, nanos, success);
    }

    @Override
    public HandlerScope handlerStarting(String subscription, Envelope envelope, String brokerProduct) {
        HandlerScope passedOn = next.handlerStarting(subscription, envelope, brokerProduct);
        String key = envelope.id();
        return new HandlerScope() {
            private volatile Throwable failure;

            @Override
            public void failed(Throwable error) {
                failure = error;
                if (passedOn != null) {
                    passedOn.failed(error);
                }
            }

            @Override
            public void close(Outcome outcome) {
                close(outcome, null);
            }

            @Override
            public void close(Outcome outcome, SettleReason reason) {
                scopes.add(new Scope(subscription, key, outcome, reason, failure));
                changed();
                if (passedOn != null) {
                    passedOn.close(outcome, reason);
                }
            }
        };
    }

    @Override
    public void storeCall(StoreOperation operation, long nanos, boolean success, int keys) {
        storeCalls.add(new StoreCall(operation, nanos, success, keys));
        changed();
        next.storeCall(operation, nanos, success, keys);
    }

    @Override
    public void sent(SendPath path, SendResult result, long nanos) {
        sends.add(new Sent(path, result, nanos));
        changed();
        next.sent(path, result, nanos);
    }

    @Override
    public void storeBypassed(String subscription) {
        bypassed.incrementAndGet();
        changed();
        next.storeBypassed(subscription);
    }

    @Override
    public void paused(boolean paused) {
        pauses.add(paused);
        changed();
        next.paused(paused);
    }

    @Override
    public void connectionInterrupted(boolean interrupted) {
        connectionChanges.add(interrupted);
        changed();
        next.connectionInterrupted(interrupted);
    }

    private void changed() {
        synchronized (events) {
            events.notifyAll();
        }
    }

    /**
     * Waits until {@code condition} holds for this observer, without polling: it is checked now and again after each
     * event recorded, until it holds or the time is up. Write it in terms of what this observer recorded (a
     * condition on anything else is only looked at when an event arrives).
     *
     * <pre>{@code
     * boolean done = observed.await(o -> o.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 2,
     *         Duration.ofSeconds(30));
     * }</pre>
     *
     * @param condition what to wait for
     * @param timeout how long to wait at most
     * @return true if the condition held, false if the time ran out first
     * @throws InterruptedException if the waiting thread is interrupted
     */
    public boolean await(Predicate<? super RecordingObserver> condition, Duration timeout)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (events) {
            while (!condition.test(this)) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(events, left);
            }
            return true;
        }
    }

    // ---- what a test reads ------------------------------------------------------------------------------------

    /** @return every settlement, in the order reported */
    public List<Settlement> settlements() {
        return List.copyOf(settlements);
    }

    /**
     * @param outcome the AMQP outcome
     * @param reason why it was settled
     * @return how many deliveries were settled with this outcome for this reason
     */
    public long count(Outcome outcome, SettleReason reason) {
        return settlements.stream().filter(s -> s.outcome() == outcome && s.reason() == reason).count();
    }

    /**
     * @param subscription the subscription's name
     * @param outcome the AMQP outcome
     * @param reason why it was settled
     * @return how many deliveries of this subscription were settled with this outcome for this reason
     */
    public long count(String subscription, Outcome outcome, SettleReason reason) {
        return settlements.stream().filter(s -> s.subscription().equals(subscription) && s.outcome() == outcome
                && s.reason() == reason).count();
    }

    /**
     * @param outcome the AMQP outcome
     * @param reason why it was settled
     * @return the keys settled with this outcome for this reason, in the order settled (null for keyless ones)
     */
    public List<String> keys(Outcome outcome, SettleReason reason) {
        List<String> keys = new ArrayList<>();
        for (Settlement s : settlements) {
            if (s.outcome() == outcome && s.reason() == reason) {
                keys.add(s.key());
            }
        }
        return keys;
    }

    /**
     * @param subscription the subscription's name
     * @return how many deliveries of this subscription ended their life here: settled {@code accepted} or
     *     {@code rejected} (not released or modified, which the broker delivers again)
     */
    public long finished(String subscription) {
        return settlements.stream().filter(s -> s.subscription().equals(subscription)
                && (s.outcome() == Outcome.ACCEPTED || s.outcome() == Outcome.REJECTED)).count();
    }

    /**
     * @return how each delivery's fate was reported, in order: {@code OUTCOME/REASON} for a settlement (for example
     *     {@code ACCEPTED/PROCESSED}), {@code abandoned} for an abandoned delivery, {@code dropped} for a disposition
     *     dropped after it was reported settled
     */
    public List<String> endings() {
        return List.copyOf(endings);
    }

    /** @return the store's answer to each claim, in order */
    public List<ClaimResult> claims() {
        return List.copyOf(claims);
    }

    /** @return how many claims got no answer (the store failed or refused the key) */
    public int claimFailures() {
        return claimFailures.get();
    }

    /** @return every conflict event, in order */
    public List<Conflict> conflicts() {
        return List.copyOf(conflicts);
    }

    /** @return how many deliveries were abandoned (their link or connection died before they were settled) */
    public int abandonments() {
        return abandoned.get();
    }

    /** @return how many dispositions reported settled were dropped with a failed connection */
    public int dispositionsDropped() {
        return dropped.get();
    }

    /** @return every handler run, in the order they ended */
    public List<Handled> handled() {
        return List.copyOf(handled);
    }

    /** @return every handler scope that closed, in order */
    public List<Scope> scopes() {
        return List.copyOf(scopes);
    }

    /** @return every store call the runtime reported, in order */
    public List<StoreCall> storeCalls() {
        return List.copyOf(storeCalls);
    }

    /**
     * @param operation which calls
     * @return how many store calls of this kind were reported (failed ones included)
     */
    public long storeCalls(StoreOperation operation) {
        return storeCalls.stream().filter(c -> c.operation() == operation).count();
    }

    /** @return how many lease renewals were reported (the heartbeat's {@link StoreOperation#RENEW} calls) */
    public int renewals() {
        return (int) storeCalls(StoreOperation.RENEW);
    }

    /** @return every message sent (or whose send failed), in the order reported */
    public List<Sent> sends() {
        return List.copyOf(sends);
    }

    /**
     * @param path how they were sent
     * @param result what the broker made of them
     * @return how many sends were reported with this path and result
     */
    public long sends(SendPath path, SendResult result) {
        return sends.stream().filter(x -> x.path() == path && x.result() == result).count();
    }

    /** @return how many handlers ran without a claim because the store was down (fail-open) */
    public int bypassed() {
        return bypassed.get();
    }

    /** @return each pause (true) and resume (false) of credit for the store, in order */
    public List<Boolean> pauses() {
        return List.copyOf(pauses);
    }

    /** @return each loss (true) and re-establishment (false) of the broker connection, in order */
    public List<Boolean> connectionChanges() {
        return List.copyOf(connectionChanges);
    }

    /** @return how many times the broker connection was lost */
    public int interruptions() {
        return (int) connectionChanges.stream().filter(Boolean::booleanValue).count();
    }

    /** @return a summary for assertion messages: settlements by outcome and reason, and the other counts */
    @Override
    public String toString() {
        java.util.Map<String, Long> byOutcome = new java.util.TreeMap<>();
        for (Settlement s : settlements) {
            byOutcome.merge(s.outcome() + "/" + s.reason(), 1L, Long::sum);
        }
        return "settled " + byOutcome + ", claims " + claims.size() + " (failed " + claimFailures.get()
                + "), conflicts " + conflicts.size() + ", abandoned " + abandoned.get() + ", dropped " + dropped.get()
                + ", sends " + sends.size()
                + ", pauses " + pauses + ", connection changes " + connectionChanges;
    }
}
