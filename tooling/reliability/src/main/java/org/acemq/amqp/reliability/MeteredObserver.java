package org.acemq.amqp.reliability;

import java.util.Map;

import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.consumer.ClaimStatus;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;

/**
 * Passes every event to a metrics observer (the consumer's {@code MicrometerObserver}); the harness consumer extends
 * it to add its own reaction to a settlement (crash points, the rejection record).
 */
class MeteredObserver implements ConsumerObserver {

    private final ConsumerObserver meters;

    MeteredObserver(ConsumerObserver meters) {
        this.meters = meters;
    }

    @Override
    public void claim(String subscription, ClaimStatus status) {
        meters.claim(subscription, status);
    }

    @Override
    public void settled(String subscription, Outcome outcome, SettleReason reason) {
        meters.settled(subscription, outcome, reason);
    }

    @Override
    public void settled(String subscription, String messageKey, Outcome outcome, SettleReason reason) {
        meters.settled(subscription, messageKey, outcome, reason);
    }

    @Override
    public void conflict(String subscription, String messageKey, String recordedFingerprint, String fingerprint) {
        meters.conflict(subscription, messageKey, recordedFingerprint, fingerprint);
    }

    @Override
    public void abandoned(String subscription) {
        meters.abandoned(subscription);
    }

    @Override
    public void handled(String subscription, long nanos, boolean success) {
        meters.handled(subscription, nanos, success);
    }

    @Override
    public HandlerScope handlerStarting(String subscription, String address, Map<String, Object> properties) {
        return meters.handlerStarting(subscription, address, properties);
    }

    @Override
    public HandlerScope handlerStarting(String subscription, Envelope envelope, String brokerProduct) {
        return meters.handlerStarting(subscription, envelope, brokerProduct);
    }

    @Override
    public void storeCall(StoreOperation operation, long nanos, boolean success) {
        meters.storeCall(operation, nanos, success);
    }

    @Override
    public void storeCall(StoreOperation operation, long nanos, boolean success, int keys) {
        meters.storeCall(operation, nanos, success, keys);
    }

    @Override
    public void storeBypassed(String subscription) {
        meters.storeBypassed(subscription);
    }

    @Override
    public void paused(boolean paused) {
        meters.paused(paused);
    }

    @Override
    public void connectionInterrupted(boolean interrupted) {
        meters.connectionInterrupted(interrupted);
    }
}
