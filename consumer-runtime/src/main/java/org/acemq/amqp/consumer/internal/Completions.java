package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends the claims of deliveries whose verdict is known (confirmed or released as {@link OutcomePolicy#confirms} says)
 * and then settles them, many per store call, with no thread and no timer of its own (leader/follower): a thread that
 * hands a delivery over pushes it onto a lock-free stack; if no store call of this subscription is in flight it becomes
 * the leader and ends every claim waiting (others' too) with one {@code confirmAll} and one {@code releaseAll}, settles
 * those deliveries, and repeats while more arrived meanwhile. Otherwise it returns at once and its delivery goes with
 * the leader's next call. So a lone delivery costs exactly one store call, as before, and a busy subscription one call
 * per batch of whatever finished during the previous call.
 *
 * <p>Nothing is settled before its claim's end was recorded, or, for a confirm, before {@code confirmTimeout} of
 * retries ran out or the store refused the key; then the policy decides what is sent
 * ({@link OutcomePolicy#confirmNotRecorded}).
 */
final class Completions {

    private static final Logger LOG = LoggerFactory.getLogger(Completions.class);

    private final String name;
    private final ConsumerRuntime runtime;
    private final OutcomePolicy policy;
    private final DeliveryProcessor processor;
    private final AtomicReference<Delivery> pending = new AtomicReference<>();
    private final AtomicBoolean busy = new AtomicBoolean();
    /** Every delivery handed over and not yet settled, for the lease heartbeat (the stack cannot be walked). */
    private final java.util.Set<Delivery> ending = java.util.concurrent.ConcurrentHashMap.newKeySet();

    Completions(String name, ConsumerRuntime runtime, OutcomePolicy policy, DeliveryProcessor processor) {
        this.name = name;
        this.runtime = runtime;
        this.policy = policy;
        this.processor = processor;
    }

    /**
     * Hands over a delivery whose claim is to be ended as {@code d.verdict} says; it is then settled, by this thread or
     * by the one leading the store call.
     *
     * @param await whether to return only once it is settled
     */
    void submit(Delivery d, boolean await) {
        if (await) {
            d.awaited = true;
        }
        push(d);
        drive();
        if (await && !d.completed) {
            d.awaitCompleted();
        }
    }

    /** Hands over a delivery without leading a store call now; {@link #drive()} must follow. */
    void push(Delivery d) {
        if (d.nextBeatNanos != 0) {
            ending.add(d); // only for the heartbeat: nothing to track where leases are not renewed
        }
        Delivery head;
        do {
            head = pending.get();
            d.nextPending = head;
        } while (!pending.compareAndSet(head, d));
    }

    /** Ends the claims waiting, unless a store call is in flight already (its leader takes them next). */
    void drive() {
        while (pending.get() != null && busy.compareAndSet(false, true)) {
            try {
                Delivery stack = pending.getAndSet(null);
                if (stack != null) {
                    complete(reverse(stack));
                }
            } finally {
                busy.set(false);
            }
        }
    }

    private static Delivery reverse(Delivery stack) {
        Delivery ordered = null;
        while (stack != null) {
            Delivery next = stack.nextPending;
            stack.nextPending = ordered;
            ordered = stack;
            stack = next;
        }
        return ordered;
    }

    private void complete(Delivery first) {
        List<Claim> unrecorded;
        if (first.nextPending == null) {
            unrecorded = endClaim(first); // the lone delivery: no lists
        } else {
            List<Claim> confirms = new ArrayList<>();
            List<Claim> releases = new ArrayList<>();
            for (Delivery d = first; d != null; d = d.nextPending) {
                (policy.confirms(d.verdict) ? confirms : releases).add(d.claim);
            }
            if (!releases.isEmpty()) {
                release(releases);
            }
            unrecorded = confirms.isEmpty() ? List.of() : confirm(confirms);
        }
        Delivery d = first;
        while (d != null) {
            Delivery next = d.nextPending;
            d.nextPending = null;
            if (!unrecorded.isEmpty() && containsSame(unrecorded, d.claim)) {
                d.verdict = policy.confirmNotRecorded(d.verdict);
            }
            settle(d);
            d = next;
        }
    }

    /** @return the claim if it was to be confirmed and the confirm was not recorded, else nothing */
    private List<Claim> endClaim(Delivery d) {
        List<Claim> one = List.of(d.claim);
        if (policy.confirms(d.verdict)) {
            return confirm(one);
        }
        release(one);
        return List.of();
    }

    private static boolean containsSame(List<Claim> claims, Claim claim) {
        for (Claim c : claims) {
            if (c == claim) {
                return true;
            }
        }
        return false;
    }

    private void settle(Delivery d) {
        boolean sent = false;
        try {
            d.claim = null;
            d.claimedNanos = 0;
            sent = processor.settle(d, d.verdict);
        } catch (RuntimeException | Error e) {
            LOG.error("Subscription '{}': a delivery could not be settled", name, e);
        } finally {
            ending.remove(d);
            d.completed(sent);
        }
    }

    /** Calls {@code action} for each delivery handed over and not yet settled (a snapshot is not needed). */
    void forEachEnding(java.util.function.Consumer<Delivery> action) {
        for (Delivery d : ending) {
            action.accept(d);
        }
    }

    /**
     * Records completion, retrying with back-off while the store fails. The deliveries are still unsettled, so the
     * broker gives them to nobody else meanwhile; a store that answers within the confirm timeout loses nothing. A
     * claim whose confirm is not recorded by then, or whose key the store refuses, is returned: what its delivery is
     * settled with is the policy's decision ({@link OutcomePolicy#confirmNotRecorded}).
     *
     * @return the claims whose confirm was not recorded (the same instances), usually none
     */
    private List<Claim> confirm(List<Claim> claims) {
        long deadline = runtime.ticker().read() + runtime.config().confirmTimeout().toNanos();
        long pauseMillis = 20;
        List<Claim> left = claims;
        List<Claim> unrecorded = List.of();
        for (int attempt = 1; ; attempt++) {
            try {
                List<Claim> lost = runtime.store().confirmAll(left);
                runtime.gate().success();
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
                if (attempt == 1) {
                    runtime.gate().failure(e);
                }
                if (runtime.ticker().read() + Duration.ofMillis(pauseMillis).toNanos() - deadline >= 0) {
                    LOG.error("Subscription '{}': handler succeeded but the store could not record {} within {}; it is "
                            + "{} anyway (a later duplicate may run again): {}", name, what(left),
                            runtime.config().confirmTimeout(), unrecordedOutcome(), Errors.describe(e));
                    return plus(unrecorded, left);
                }
                pause(Duration.ofMillis(pauseMillis));
                pauseMillis = Math.min(pauseMillis * 2, 1_000);
            }
        }
    }

    private void release(List<Claim> claims) {
        try {
            runtime.store().releaseAll(claims);
        } catch (RuntimeException e) {
            // The leases lapse on their own; until then copies are IN_PROGRESS and held back, never lost.
            LOG.warn("Subscription '{}': could not release {} ({}); it frees when its lease expires", name,
                    what(claims), Errors.describe(e));
            if (!(e instanceof InvalidMessageIdException)) {
                runtime.gate().failure(e);
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
        return policy.confirmNotRecorded(Verdict.PROCESSED).outcome().name().toLowerCase(java.util.Locale.ROOT);
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
     */
    private void pause(Duration delay) {
        boolean[] woken = {false};
        try {
            runtime.scheduler().schedule(() -> {
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
        } catch (RejectedExecutionException e) {
            // shutting down: retry at once
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
