package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.RejectedExecutionException;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.consumer.Scheduler;
import org.acemq.amqp.consumer.Ticker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store side of the end stage: confirms claims (retrying with back-off while the store fails, up to
 * {@code confirmTimeout}) and releases them, many per store call. {@link Completions} decides which and settles.
 */
final class ClaimEnds {

    private static final Logger LOG = LoggerFactory.getLogger(ClaimEnds.class);

    private final String name;
    private final OutcomePolicy policy;
    private final StoreAccess store;
    private final StoreGate gate;
    private final Ticker ticker;
    private final Scheduler scheduler;
    private final Duration confirmTimeout;

    /** @param scheduler where the back-off between confirm attempts waits (so that tests can move time) */
    ClaimEnds(String name, OutcomePolicy policy, StoreAccess store, StoreGate gate, Ticker ticker,
              Scheduler scheduler, Duration confirmTimeout) {
        this.name = name;
        this.policy = policy;
        this.store = store;
        this.gate = gate;
        this.ticker = ticker;
        this.scheduler = scheduler;
        this.confirmTimeout = confirmTimeout;
    }

    /**
     * Records completion, retrying with back-off while the store fails. The deliveries are still unsettled, so the
     * broker gives them to nobody else meanwhile; a store that answers within the confirm timeout loses nothing. A
     * claim whose confirm is not recorded by then, or whose key the store refuses, is returned: what its delivery is
     * settled with is the policy's decision ({@link OutcomePolicy#confirmNotRecorded}).
     *
     * @return the claims whose confirm was not recorded (the same instances), usually none
     */
    List<Claim> confirm(List<Claim> claims) {
        long deadline = ticker.read() + confirmTimeout.toNanos();
        long pauseMillis = 20;
        List<Claim> left = claims;
        List<Claim> unrecorded = List.of();
        boolean outageReported = false;
        for (int attempt = 1; ; attempt++) {
            try {
                List<Claim> lost = store.confirmAll(left);
                gate.success();
                for (Claim c : lost) {
                    LOG.warn("Subscription '{}': {} was confirmed after its lease had been taken over", name,
                            LogSafe.id(c.messageId()));
                }
                if (attempt > 1) {
                    LOG.info("Subscription '{}': {} confirmed after {} attempts", name, what(left), attempt);
                }
                return unrecorded;
            } catch (InvalidMessageIdException e) {
                // the store took this key when it was claimed and refuses it now: it never will take it
                List<Claim> rest = without(left, e.messageId());
                boolean named = rest.size() < left.size();
                List<Claim> refused = named ? only(left, e.messageId()) : left;
                LOG.error("Subscription '{}': the store refuses to record {} ({}); it is {} anyway (a later duplicate "
                        + "of it may run again)", name, named ? LogSafe.id(e.messageId()) : what(left),
                        Errors.describe(e), unrecordedOutcome());
                unrecorded = plus(unrecorded, refused);
                if (!named || rest.isEmpty()) {
                    return unrecorded;
                }
                left = rest;
            } catch (RuntimeException e) {
                if (!outageReported) {
                    outageReported = true;
                    gate.failure(e);
                }
                long remaining = deadline - ticker.read();
                // the last attempt is made at the deadline itself: a store that answers within the timeout loses nothing
                if (remaining <= 0 || !pause(Duration.ofNanos(Math.min(Duration.ofMillis(pauseMillis).toNanos(), remaining)))) {
                    LOG.error("Subscription '{}': handler succeeded but the store could not record {} within {}{}; it "
                            + "is {} anyway (a later duplicate may run again): {}", name, what(left), confirmTimeout,
                            remaining <= 0 ? "" : " (the consumer closed meanwhile)", unrecordedOutcome(),
                            Errors.describe(e));
                    return plus(unrecorded, left);
                }
                pauseMillis = Math.min(pauseMillis * 2, 1_000);
            }
        }
    }

    void release(List<Claim> claims) {
        try {
            store.releaseAll(claims);
        } catch (RuntimeException e) {
            // The leases lapse on their own; until then copies are IN_PROGRESS and held back, never lost.
            LOG.warn("Subscription '{}': could not release {} ({}); it frees when its lease expires", name,
                    what(claims), Errors.describe(e));
            if (!(e instanceof InvalidMessageIdException)) {
                gate.failure(e);
            }
        }
    }

    private static List<Claim> without(List<Claim> claims, String key) {
        List<Claim> rest = new ArrayList<>(claims.size());
        for (Claim c : claims) {
            if (!c.messageId().equals(key)) {
                rest.add(c);
            }
        }
        return rest;
    }

    /** @return how a processed delivery whose confirm was not recorded is settled, for the log */
    private String unrecordedOutcome() {
        return policy.confirmNotRecorded(Verdict.PROCESSED).outcome().name().toLowerCase(Locale.ROOT);
    }

    private static List<Claim> only(List<Claim> claims, String key) {
        List<Claim> these = new ArrayList<>(1);
        for (Claim c : claims) {
            if (c.messageId().equals(key)) {
                these.add(c);
            }
        }
        return these;
    }

    private static List<Claim> plus(List<Claim> a, List<Claim> b) {
        if (a.isEmpty()) {
            return b;
        }
        List<Claim> all = new ArrayList<>(a);
        all.addAll(b);
        return all;
    }

    private static String what(List<Claim> claims) {
        return claims.size() == 1 ? LogSafe.id(claims.get(0).messageId()) : claims.size() + " messages";
    }

    /**
     * Waits on the consumer's scheduler (so that tests can move time), without holding anything. The wait is on a
     * monitor, not a latch: an AQS latch may leave a stray unpark behind, which would cut short the handler's next
     * {@code LockSupport.park} on this thread.
     *
     * @return false if the scheduler refused the wait (the consumer is closed): no more retries then
     */
    private boolean pause(Duration delay) {
        boolean[] woken = {false};
        try {
            scheduler.schedule(() -> {
                synchronized (woken) {
                    woken[0] = true;
                    woken.notifyAll();
                }
            }, delay);
            synchronized (woken) {
                while (!woken[0]) {
                    woken.wait();
                }
            }
            return true;
        } catch (RejectedExecutionException e) {
            return false; // closed: retrying at once would spin against a store that is down
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return true;
        }
    }
}
