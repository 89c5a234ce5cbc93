package org.acemq.amqp.consumer.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.consumer.Ticker;
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
    private final OutcomePolicy policy;
    private final Settler settler;
    private final ClaimEnds ends;
    private final Ticker ticker;
    private final long beatNanos;
    /** The most deliveries of the pending stack the heartbeat walks (the stack may be taken while it walks it). */
    private static final int MAX_WALK = 10_000;

    private final AtomicReference<Delivery> pending = new AtomicReference<>();
    private final AtomicBoolean busy = new AtomicBoolean();
    /**
     * The first of the batch the leader is ending now, linked in order through {@code nextPending}, for the lease
     * heartbeat (published only where leases are renewed): the deliveries it took off the stack are out of the
     * heartbeat's reach otherwise. No set, no copy, no per-delivery tracking.
     */
    private volatile Delivery inFlight;

    /** @param beatNanos the lease renewal period, 0 if leases are not renewed */
    Completions(String name, OutcomePolicy policy, Settler settler, ClaimEnds ends, Ticker ticker, long beatNanos) {
        this.name = name;
        this.policy = policy;
        this.settler = settler;
        this.ends = ends;
        this.ticker = ticker;
        this.beatNanos = beatNanos;
    }

    /**
     * The end stage's entry: ends the delivery's claim, if it holds one, here or batched with other threads' (then
     * settles it); without a claim settles it at once.
     *
     * @param verdict a SETTLE verdict
     * @param drive whether to lead the store call now; false hands the delivery over only, and the caller calls
     *     {@link #drive()} once for many
     * @return whether the delivery was handed over without driving
     */
    boolean end(Delivery d, Verdict verdict, boolean drive) {
        if (d.claim == null) {
            d.completed(settler.settle(d, verdict));
            return false;
        }
        d.moveTo(Delivery.State.ENDING);
        d.verdict = verdict;
        if (beatNanos > 0) {
            // the lease is renewed until the claim's end is recorded, however long the confirm waits (not only while
            // the handler runs): a confirm queued behind a busy store must not find its lease lapsed
            d.nextBeatNanos = ticker.read() + beatNanos;
        }
        if (!drive) {
            push(d);
            return true;
        }
        submit(d, d.scope != null);
        return false;
    }

    /**
     * Hands over a delivery whose claim is to be ended as {@code d.verdict} says; it is then settled, by this thread or
     * by the one leading the store call.
     *
     * @param await whether to return only once it is settled
     */
    private void submit(Delivery d, boolean await) {
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
    private void push(Delivery d) {
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
                    Delivery ordered = reverse(stack);
                    if (beatNanos > 0) {
                        inFlight = ordered;
                    }
                    complete(ordered);
                }
            } finally {
                if (beatNanos > 0) {
                    inFlight = null;
                }
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
                ends.release(releases);
            }
            unrecorded = confirms.isEmpty() ? List.of() : ends.confirm(confirms);
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
            return ends.confirm(one);
        }
        ends.release(one);
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
            sent = settler.settle(d, d.verdict);
        } catch (RuntimeException | Error e) {
            LOG.error("Subscription '{}': a delivery could not be settled", name, e);
        } finally {
            d.completed(sent);
        }
    }

    /**
     * Calls {@code action} for each delivery handed over whose claim has not ended yet: those the leader ends now,
     * then those waiting on the stack. Both are walked without a lock (bounded: the leader may take and reorder the
     * stack, and unlinks its batch as it settles it, meanwhile), so a delivery may be missed by one sweep or seen twice;
     * the heartbeat's next sweep makes up for it. The leader unlinks a delivery only after its claim's end was
     * recorded, so a batch waiting on a slow store call is always reached whole.
     */
    void forEachEnding(java.util.function.Consumer<Delivery> action) {
        walk(inFlight, action);
        walk(pending.get(), action);
    }

    private static void walk(Delivery first, java.util.function.Consumer<Delivery> action) {
        int walked = 0;
        for (Delivery d = first; d != null && walked < MAX_WALK; d = d.nextPending, walked++) {
            if (d.state() == Delivery.State.ENDING) {
                action.accept(d);
            }
        }
    }
}
