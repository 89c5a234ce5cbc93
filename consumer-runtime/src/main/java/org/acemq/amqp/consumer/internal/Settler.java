package org.acemq.amqp.consumer.internal;

import java.util.Locale;
import java.util.function.BooleanSupplier;
import org.acemq.amqp.api.Claim;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The settle stage: sends a delivery's verdict through the subscription's {@link Settlement} now, or holds the
 * delivery first for the verdict's delay (unless the policy drops the hold: {@link OutcomePolicy#whenSent}). Also
 * where a delivery whose processing failed unexpectedly ends ({@link #failed}). It decides nothing.
 */
final class Settler {

    private static final Logger LOG = LoggerFactory.getLogger(Settler.class);

    private final String name;
    private final OutcomePolicy policy;
    private final Settlement settlement;
    private final Holds holds;
    private final StoreAccess store;
    private final BooleanSupplier stopping;

    /** @param stopping whether the subscription is stopping (a hold is then dropped) */
    Settler(String name, OutcomePolicy policy, Settlement settlement, Holds holds, StoreAccess store,
            BooleanSupplier stopping) {
        this.name = name;
        this.policy = policy;
        this.settlement = settlement;
        this.holds = holds;
        this.store = store;
        this.stopping = stopping;
    }

    /**
     * @param d a delivery whose claim, if it held one, has ended
     * @param decided a SETTLE verdict
     * @return whether it was sent, enlisted or scheduled (false: abandoned, its link is gone)
     */
    boolean settle(Delivery d, Verdict decided) {
        Verdict verdict = policy.whenSent(decided, stopping.getAsBoolean());
        if (!verdict.delay().isZero()) {
            d.moveTo(Delivery.State.HELD);
            holds.hold(d, verdict.delay(), () -> send(d, verdict));
            return true;
        }
        return send(d, verdict);
    }

    private boolean send(Delivery d, Verdict verdict) {
        d.moveTo(Delivery.State.SETTLED);
        return settlement.settle(d, verdict);
    }

    /**
     * Whatever broke (a store bug, a linkage error, a bug in a stage), the delivery must still be settled as the
     * policy says for that ({@link OutcomePolicy#unexpectedFailure}) and free its slot; a claim it holds is released.
     * A delivery already settled is left as it is.
     *
     * @return the verdict it was settled with, or null if it had been settled already
     */
    Verdict failed(Delivery d, Throwable e) {
        Verdict verdict = policy.unexpectedFailure();
        LOG.error("Subscription '{}': unexpected failure while processing a delivery; settling it as {}", name,
                verdict.outcome().name().toLowerCase(Locale.ROOT), e);
        Claim claim = d.claim;
        d.claim = null;
        d.claimedNanos = 0;
        d.claimAtStart = false;
        if (claim != null) {
            try {
                store.release(claim);
            } catch (RuntimeException re) {
                LOG.warn("Subscription '{}': could not release {} ({}); it frees when its lease expires", name,
                        LogSafe.id(claim.messageId()), Errors.describe(re));
            }
        }
        if (d.state() == Delivery.State.SETTLED
                || (d.state() == Delivery.State.HELD && !holds.cancel(d))) {
            return null; // settled already, or its hold is settling it
        }
        d.moveTo(Delivery.State.SETTLED);
        d.completed(settlement.settle(d, verdict));
        return verdict;
    }
}
