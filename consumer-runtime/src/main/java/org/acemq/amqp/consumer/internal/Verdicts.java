package org.acemq.amqp.consumer.internal;

import java.util.Locale;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.RejectionHandler;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Asks {@link OutcomePolicy} for a delivery's verdict, puts a rejection to the subscription's
 * {@link RejectionHandler} first when it has one (the policy says what its answer makes of it), and logs the verdicts
 * worth a line. Used by the stages at each point where a delivery's fate can be decided.
 */
final class Verdicts {

    private static final Logger LOG = LoggerFactory.getLogger(Verdicts.class);

    private final String name;
    private final Subscription spec;
    private final OutcomePolicy policy;
    private final boolean atMostOnce;

    Verdicts(Subscription spec, OutcomePolicy policy) {
        this.name = spec.name();
        this.spec = spec;
        this.policy = policy;
        this.atMostOnce = spec.acknowledgementMode() == AcknowledgementMode.AT_MOST_ONCE;
    }

    /** @return the policy's verdict on the delivery's facts, after the rejection handler if it is consulted */
    Verdict decide(Delivery d, DeliveryFacts facts) {
        Verdict v = policy.decide(facts);
        return policy.consults(v) ? policy.afterRejectionHandler(v, consultRejectionHandler(d, v, facts)) : v;
    }

    /** @return the rejection handler's answer; null if it threw or answered nothing (logged) */
    private RejectionHandler.Decision consultRejectionHandler(Delivery d, Verdict v, DeliveryFacts facts) {
        RejectionHandler handler = spec.rejectionHandler().orElseThrow();
        RejectionHandler.Decision decision;
        try {
            decision = handler.onRejection(new RejectionHandler.Rejection(name, v.reason(), v.condition(),
                    v.description(), d.envelope(), facts.failure()));
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable t) {
            LOG.error("Subscription '{}': the rejection handler failed on {} ({}); it is rejected as decided ({})",
                    name, d.logId(), v.reason().name().toLowerCase(Locale.ROOT), v.condition(), t);
            return null;
        } finally {
            Thread.interrupted(); // as after the message handler: an interrupt meant for it must not reach receive()
        }
        if (decision == null) {
            LOG.error("Subscription '{}': the rejection handler answered null on {} ({}); it is rejected as decided "
                    + "({})", name, d.logId(), v.reason().name().toLowerCase(Locale.ROOT), v.condition());
        } else if (decision == RejectionHandler.Decision.ACCEPT) {
            LOG.info("Subscription '{}': the rejection handler took {} over ({}: {}); it is accepted", name, d.logId(),
                    v.reason().name().toLowerCase(Locale.ROOT), v.condition());
        }
        return decision;
    }

    /** Logs a verdict that deserves a line (poison, a refused key, a conflict, an at-most-once loss). */
    void log(Delivery d, Verdict v) {
        switch (v.reason()) {
            case POISON -> LOG.warn("Subscription '{}': rejecting {} as poison: {}", name, d.logId(), v.description());
            case INVALID_ID -> LOG.warn("Subscription '{}': rejecting {}: {}", name, d.logId(), v.description());
            case CONFLICT -> LOG.warn("Subscription '{}': message {} arrived with fingerprint {}, but the store holds"
                    + " its key with fingerprint {} (the same key with other content); its handler does not run, it is"
                    + " {}", name, d.logId(), LogSafe.id(d.arrival.fingerprint()), LogSafe.id(d.recordedFingerprint),
                    v.outcome() == Outcome.REJECTED ? "rejected" : "settled as a copy of that key ("
                            + v.outcome().name().toLowerCase(Locale.ROOT) + ")");
            case FAILED, STORE_UNAVAILABLE -> {
                if (atMostOnce) {
                    LOG.warn("Subscription '{}' (at-most-once): message {} is lost ({})", name, d.logId(),
                            v.reason() == SettleReason.FAILED ? "its handler failed" : "the store is unreachable");
                }
            }
            default -> {
            }
        }
    }
}
