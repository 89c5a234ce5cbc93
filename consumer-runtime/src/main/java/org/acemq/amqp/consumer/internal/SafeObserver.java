package org.acemq.amqp.consumer.internal;

import java.util.Map;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SendPath;
import org.acemq.amqp.consumer.SendResult;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Shields the runtime from an observer that throws: the exception is logged once per call and otherwise ignored. */
final class SafeObserver implements ConsumerObserver {

    private static final Logger LOG = LoggerFactory.getLogger(SafeObserver.class);

    private final ConsumerObserver delegate;
    private final boolean active;

    SafeObserver(ConsumerObserver delegate) {
        this.delegate = delegate;
        this.active = delegate != ConsumerObserver.NOOP;
    }

    /** @return false for {@link ConsumerObserver#NOOP}: callers skip timing work nobody reads */
    boolean active() {
        return active;
    }

    private void failed(RuntimeException e) {
        LOG.warn("ConsumerObserver {} threw; ignoring", delegate.getClass().getName(), e);
    }

    @Override
    public void claim(String subscription, ClaimResult result) {
        try {
            delegate.claim(subscription, result);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void claimFailed(String subscription) {
        try {
            delegate.claimFailed(subscription);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void settled(String subscription, String messageKey, Outcome outcome, SettleReason reason) {
        try {
            delegate.settled(subscription, messageKey, outcome, reason);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void conflict(String subscription, String messageKey, String recordedFingerprint, String fingerprint) {
        try {
            delegate.conflict(subscription, messageKey, recordedFingerprint, fingerprint);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void abandoned(String subscription) {
        try {
            delegate.abandoned(subscription);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void dispositionDropped(String subscription) {
        try {
            delegate.dispositionDropped(subscription);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void handled(String subscription, long nanos, boolean success) {
        try {
            delegate.handled(subscription, nanos, success);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public HandlerScope handlerStarting(String subscription, String address, Map<String, Object> properties) {
        HandlerScope scope;
        try {
            scope = delegate.handlerStarting(subscription, address, properties);
        } catch (RuntimeException e) {
            failed(e);
            return null;
        }
        return safe(scope);
    }

    @Override
    public HandlerScope handlerStarting(String subscription, Envelope envelope, String brokerProduct) {
        HandlerScope scope;
        try {
            scope = delegate.handlerStarting(subscription, envelope, brokerProduct);
        } catch (RuntimeException e) {
            failed(e);
            return null;
        }
        return safe(scope);
    }

    private HandlerScope safe(HandlerScope scope) {
        if (scope == null) {
            return null;
        }
        return new HandlerScope() {
            @Override
            public void failed(Throwable error) {
                try {
                    scope.failed(error);
                } catch (RuntimeException e) {
                    SafeObserver.this.failed(e);
                }
            }

            @Override
            public void close(Outcome outcome) {
                try {
                    scope.close(outcome);
                } catch (RuntimeException e) {
                    SafeObserver.this.failed(e);
                }
            }

            @Override
            public void close(Outcome outcome, SettleReason reason) {
                try {
                    scope.close(outcome, reason);
                } catch (RuntimeException e) {
                    SafeObserver.this.failed(e);
                }
            }
        };
    }

    @Override
    public void storeCall(StoreOperation operation, long nanos, boolean success) {
        try {
            delegate.storeCall(operation, nanos, success);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void storeCall(StoreOperation operation, long nanos, boolean success, int keys) {
        try {
            delegate.storeCall(operation, nanos, success, keys);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void sent(SendPath path, SendResult result, long nanos) {
        try {
            delegate.sent(path, result, nanos);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void storeBypassed(String subscription) {
        try {
            delegate.storeBypassed(subscription);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void paused(boolean paused) {
        try {
            delegate.paused(paused);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void connectionInterrupted(boolean interrupted) {
        try {
            delegate.connectionInterrupted(interrupted);
        } catch (RuntimeException e) {
            failed(e);
        }
    }
}
