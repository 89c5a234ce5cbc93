package org.acemq.amqp.consumer;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Records what the runtime reports about keys: every settlement with its subscription and key, and every conflict
 * event, and passes both on to another observer if one is given (a {@code MicrometerObserver}, to read the meters).
 */
final class ScopeObserver implements ConsumerObserver {

    private final ConsumerObserver next;

    ScopeObserver() {
        this(new ConsumerObserver() { });
    }

    ScopeObserver(ConsumerObserver next) {
        this.next = next;
    }

    record Settled(String subscription, String key, Outcome outcome, SettleReason reason) {
    }

    record Conflict(String subscription, String key, String recordedFingerprint, String fingerprint) {
    }

    final List<Settled> settled = new CopyOnWriteArrayList<>();
    final List<Conflict> conflicts = new CopyOnWriteArrayList<>();

    @Override
    public void settled(String subscription, String messageKey, Outcome outcome, SettleReason reason) {
        settled.add(new Settled(subscription, messageKey, outcome, reason));
        next.settled(subscription, messageKey, outcome, reason);
    }

    @Override
    public void conflict(String subscription, String messageKey, String recordedFingerprint, String fingerprint) {
        conflicts.add(new Conflict(subscription, messageKey, recordedFingerprint, fingerprint));
        next.conflict(subscription, messageKey, recordedFingerprint, fingerprint);
    }

    /** @return settlements of this subscription with this outcome and reason */
    long count(String subscription, Outcome outcome, SettleReason reason) {
        return settled.stream().filter(s -> s.subscription().equals(subscription) && s.outcome() == outcome
                && s.reason() == reason).count();
    }

    /** @return settlements of any subscription with this outcome and reason */
    long count(Outcome outcome, SettleReason reason) {
        return settled.stream().filter(s -> s.outcome() == outcome && s.reason() == reason).count();
    }

    /** @return settlements of this subscription that end the message's life here (accepted or rejected) */
    long finished(String subscription) {
        return settled.stream().filter(s -> s.subscription().equals(subscription)
                && (s.outcome() == Outcome.ACCEPTED || s.outcome() == Outcome.REJECTED)).count();
    }
}
