package org.acemq.amqp.consumer.testing;

import java.net.ConnectException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.api.LeasedIdempotencyStore;
import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.consumer.StoreOperation;

/**
 * An idempotency store that works like the store it wraps until a test tells it not to: it can be down, fail the next
 * calls of one operation, refuse a key, answer slowly, or hold calls until the test lets them go; and it records every
 * call it receives. Wrap any store (the in-memory one in a unit test, your real one in an integration test):
 *
 * <pre>{@code
 * FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
 * AmqpConsumer consumer = AmqpConsumer.builder()...store(store.store())...start();
 * store.down(true);                                   // every call now fails: the consumer pauses
 * store.down(false);                                  // and resumes
 * store.failNext(StoreOperation.CONFIRM, 2);          // the next two confirms fail, then they work again
 * store.refuse("orders|s:bad");                       // claiming this key throws InvalidMessageIdException
 * store.calls(StoreOperation.CLAIM);                  // the number of keys of each claim call, in order
 * store.history();                                    // every call, e.g. "acquireAll [orders|s:a, orders|s:b]"
 * }</pre>
 *
 * <p>Operations are named with {@link StoreOperation}: {@code CLAIM} ({@code acquire}, {@code acquireAll},
 * {@code claim}, {@code tryClaim}), {@code CONFIRM} ({@code confirm}, {@code confirmAll}), {@code RELEASE}
 * ({@code release}, {@code releaseAll}), {@code RENEW} ({@code renew}) and {@code PROBE} ({@code isConfirmed}).
 * {@code attempts} fails while the store is down and is otherwise passed through; {@code leaseDuration} and
 * {@code retention} always are. A call goes through these steps, in order: it is recorded (and told to the listeners
 * added with {@link #onCall}, on the calling thread), waits at its operation's gate ({@link #hold}), waits out its
 * delay ({@link #delay}), fails if a fault applies (down, an error set with {@link #failWith}, a failure left from
 * {@link #failNext}, a refused key), and otherwise reaches the wrapped store.
 * An injected outage is a {@link StoreUnavailableException} caused by a {@link ConnectException}, as a real store's
 * would be.
 *
 * <p><b>Batches stay batches.</b> When the wrapped store is a {@link LeasedIdempotencyStore}, this store is one too
 * and passes each batch call ({@code acquireAll}, {@code confirmAll}, {@code releaseAll}) on whole, so the consumer
 * batches exactly as it would with the wrapped store. A fault fails a batch whole, as one statement would: nothing
 * of it is written. When the wrapped store is a plain {@link IdempotencyStore}, give the consumer {@link #store()}
 * (a view that is only an {@code IdempotencyStore}), so the consumer treats it as the plain store it is; the leased
 * methods of this object then throw {@link UnsupportedOperationException}. {@code store()} works in both cases;
 * {@link #plainStore()} gives the plain view of a leased store too, to test the consumer's path for plain stores.
 *
 * <p><b>Threading:</b> thread-safe; the controls may be changed while the consumer is calling.
 */
public final class FaultInjectingStore implements LeasedIdempotencyStore {

    /** Permits of an open gate: more than any test will use, and twice it still fits in an int. */
    private static final int OPEN = Integer.MAX_VALUE / 2;

    private final IdempotencyStore delegate;
    private final LeasedIdempotencyStore leased;
    private final IdempotencyStore plainView = new PlainView();
    private final Map<StoreOperation, Operation> operations = new EnumMap<>(StoreOperation.class);
    private final Set<String> liveClaims = ConcurrentHashMap.newKeySet();
    private final AtomicInteger claimed = new AtomicInteger();
    private final AtomicInteger refusedConfirms = new AtomicInteger();
    private volatile boolean down;
    private volatile String refusedKey;
    private volatile boolean refusalNamesKey = true;
    private final List<Call> history = new CopyOnWriteArrayList<>();
    private final List<Consumer<? super Call>> listeners = new CopyOnWriteArrayList<>();
    private volatile String refusedConfirmKey;

    /**
     * One call the store received, as {@link #history()} and the {@link #onCall} listeners see it.
     *
     * @param operation the operation the call belongs to
     * @param method the name of the method called ({@code acquireAll}, {@code confirm}, {@code isConfirmed}, ...)
     * @param keys the keys it named, in order (one for a single call)
     */
    public record Call(StoreOperation operation, String method, List<String> keys) {

        /**
         * Copies {@code keys} (a key may be null: the call is recorded as it was made).
         *
         * @param operation the operation the call belongs to
         * @param method the name of the method called
         * @param keys the keys it named, in order
         */
        public Call {
            Objects.requireNonNull(operation, "operation");
            Objects.requireNonNull(method, "method");
            keys = Collections.unmodifiableList(new ArrayList<>(keys));
        }

        /** @return the method and its keys, for example {@code acquireAll [orders|s:a, orders|s:b]} */
        @Override
        public String toString() {
            return method + " " + keys;
        }
    }

    /** What is set and recorded for one operation. */
    private static final class Operation {
        final Semaphore gate = new Semaphore(OPEN);
        final AtomicInteger waiting = new AtomicInteger();
        final AtomicInteger failNext = new AtomicInteger();
        final AtomicInteger failures = new AtomicInteger();
        volatile Throwable error;
        volatile Duration delay = Duration.ZERO;
    }

    /**
     * @param delegate the store that answers while no fault applies
     */
    public FaultInjectingStore(IdempotencyStore delegate) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.leased = delegate instanceof LeasedIdempotencyStore l ? l : null;
        for (StoreOperation op : StoreOperation.values()) {
            operations.put(op, new Operation());
        }
    }

    /**
     * @return the store to give the consumer: this object when the wrapped store is a {@link LeasedIdempotencyStore},
     *     otherwise a view of it that is only an {@link IdempotencyStore} (with the same faults and records)
     */
    public IdempotencyStore store() {
        return leased != null ? this : plainView;
    }

    /**
     * @return a view of this store that is only an {@link IdempotencyStore}, even when the wrapped store is a
     *     {@link LeasedIdempotencyStore}: the consumer then takes the plain store's path (no leases, no batches), the
     *     way it would with a store that implements only the plain interface; same faults and records
     */
    public IdempotencyStore plainStore() {
        return plainView;
    }

    /** @return the wrapped store, to look at what it holds without going through the faults */
    public IdempotencyStore delegate() {
        return delegate;
    }

    // ---- controls -----------------------------------------------------------------------------------------------

    /**
     * @param isDown true: from now on every call (but {@code leaseDuration} and {@code retention}) fails with a
     *     {@link StoreUnavailableException}, as if the store could not be reached; false: calls work again
     */
    public void down(boolean isDown) {
        this.down = isDown;
    }

    /** @return whether the store is down */
    public boolean isDown() {
        return down;
    }

    /**
     * The next {@code calls} calls of this operation fail with a {@link StoreUnavailableException} (a batch call
     * counts as one); other operations are unaffected.
     *
     * @param operation which calls fail
     * @param calls how many; {@code Integer.MAX_VALUE} for all of them, 0 to stop
     */
    public void failNext(StoreOperation operation, int calls) {
        op(operation).failNext.set(calls);
    }

    /**
     * From now on every call of this operation throws {@code error}, until called again with null: an unexpected
     * failure (a bug, a linkage error, a driver's runtime exception) rather than an outage.
     *
     * @param operation which calls fail
     * @param error a {@link RuntimeException} or an {@link Error}; null to stop
     */
    public void failWith(StoreOperation operation, Throwable error) {
        if (error != null && !(error instanceof RuntimeException) && !(error instanceof Error)) {
            throw new IllegalArgumentException("a store call can throw only unchecked exceptions, not " + error);
        }
        op(operation).error = error;
    }

    /**
     * From now on claiming this key throws {@link InvalidMessageIdException} naming it (the store works, this key it
     * cannot hold); a batch that holds it fails whole. Null: no key is refused.
     *
     * @param key the store key, as the consumer passes it (for example {@code orders|s:order-7})
     */
    public void refuse(String key) {
        refuse(key, true);
    }

    /**
     * As {@link #refuse(String)}; with {@code namesKey} false the {@link InvalidMessageIdException} names no key
     * ({@link InvalidMessageIdException#messageId()} is null), as from a store that can tell a batch held a key it
     * cannot hold but not which one.
     *
     * @param key the store key, or null: no key is refused
     * @param namesKey whether the exception names the refused key
     */
    public void refuse(String key, boolean namesKey) {
        this.refusalNamesKey = namesKey;
        this.refusedKey = key;
    }

    /**
     * From now on confirming this key throws {@link InvalidMessageIdException} naming it (the store took the key when
     * it was claimed and cannot record it now); a batch that holds it fails whole. Null: no confirm is refused.
     *
     * @param key the store key
     */
    public void refuseConfirmOf(String key) {
        this.refusedConfirmKey = key;
    }

    /**
     * Every call of this operation takes at least this long from now on (a slow store, not a failing one).
     *
     * @param operation which calls
     * @param delay how long each waits before it is answered; zero for no delay
     */
    public void delay(StoreOperation operation, Duration delay) {
        if (delay.isNegative()) {
            throw new IllegalArgumentException("a delay is zero or positive: " + delay);
        }
        op(operation).delay = delay;
    }

    /**
     * From now on calls of this operation wait, until {@link #allow} or {@link #open} lets them through. Calls
     * already past the gate are not affected.
     *
     * @param operation which calls
     */
    public void hold(StoreOperation operation) {
        op(operation).gate.drainPermits();
    }

    /**
     * Lets {@code keys} more keys of this operation through the gate (to calls waiting or to come): a call passes
     * when there is a permit for each of its keys, so a batch never passes in part.
     *
     * @param operation which calls
     * @param keys how many keys may pass
     */
    public void allow(StoreOperation operation, int keys) {
        op(operation).gate.release(keys);
    }

    /**
     * Lets every call of this operation through again (those waiting and those to come).
     *
     * @param operation which calls
     */
    public void open(StoreOperation operation) {
        Semaphore gate = op(operation).gate;
        gate.drainPermits();
        gate.release(OPEN);
    }

    // ---- records ------------------------------------------------------------------------------------------------

    /**
     * @param operation which calls
     * @return how many calls of this operation wait at its gate now
     */
    public int waiting(StoreOperation operation) {
        return op(operation).waiting.get();
    }

    /**
     * @param operation which calls
     * @return the number of keys of each call of this operation received so far, in order (a single call counts as
     *     a call of one; failed and waiting calls included)
     */
    public List<Integer> calls(StoreOperation operation) {
        return history.stream().filter(c -> c.operation() == operation).map(c -> c.keys().size()).toList();
    }

    /**
     * @return every call received so far (of the operations {@link #calls} counts), in the order they arrived;
     *     failed and waiting calls included
     */
    public List<Call> history() {
        return List.copyOf(history);
    }

    /**
     * Adds a listener told of each call (those {@link #history()} records) as it is recorded: on the calling thread,
     * before the call waits at its gate or fails, so a test can write store calls and its own events (what its
     * handler did, what was settled) into one log in the order they happened. A listener must be quick and must not
     * throw; it cannot be removed.
     *
     * @param listener what to tell
     */
    public void onCall(Consumer<? super Call> listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    /**
     * @param operation which calls
     * @return how many calls of this operation failed with an injected outage (down or {@link #failNext})
     */
    public int failures(StoreOperation operation) {
        return op(operation).failures.get();
    }

    /** @return how many calls failed with an injected outage, all operations together */
    public int failures() {
        int n = 0;
        for (Operation op : operations.values()) {
            n += op.failures.get();
        }
        return n;
    }

    /** @return how many confirms were refused with {@link #refuseConfirmOf} */
    public int refusedConfirms() {
        return refusedConfirms.get();
    }

    /** @return how many claims the wrapped store granted through this one */
    public int claimed() {
        return claimed.get();
    }

    /**
     * @param key a store key
     * @return whether this key was claimed through this store and not yet confirmed or released through it (for a
     *     handler to check it runs under a claim)
     */
    public boolean holdsClaim(String key) {
        return liveClaims.contains(key);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("FaultInjectingStore over ").append(delegate.getClass().getSimpleName());
        sb.append(down ? " (down)" : "");
        for (Map.Entry<StoreOperation, Operation> e : operations.entrySet()) {
            sb.append(", ").append(e.getKey()).append(' ').append(calls(e.getKey()).size()).append(" call(s)");
        }
        return sb.toString();
    }

    // ---- the steps of a call ------------------------------------------------------------------------------------

    private Operation op(StoreOperation operation) {
        return operations.get(Objects.requireNonNull(operation, "operation"));
    }

    /** Records the call, waits at the gate and out the delay, and throws a fault that applies to every key. */
    private void enter(StoreOperation operation, String method, List<String> keyList) {
        int keys = keyList.size();
        Operation op = op(operation);
        Call call = new Call(operation, method, keyList);
        history.add(call);
        for (Consumer<? super Call> listener : listeners) {
            listener.accept(call);
        }
        op.waiting.incrementAndGet();
        try {
            op.gate.acquireUninterruptibly(Math.max(1, keys));
        } finally {
            op.waiting.decrementAndGet();
        }
        Duration delay = op.delay;
        if (!delay.isZero()) {
            pause(delay);
        }
        if (down) {
            op.failures.incrementAndGet();
            throw outage("test store is down");
        }
        Throwable error = op.error;
        if (error instanceof RuntimeException r) {
            throw r;
        }
        if (error instanceof Error e) {
            throw e;
        }
        if (op.failNext.getAndUpdate(n -> n == Integer.MAX_VALUE ? n : Math.max(0, n - 1)) > 0) {
            op.failures.incrementAndGet();
            throw outage("test store fails this " + operation.name().toLowerCase(java.util.Locale.ROOT));
        }
    }

    private static void pause(Duration delay) {
        try {
            TimeUnit.NANOSECONDS.sleep(delay.toNanos());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw outage("interrupted while the test store was slow");
        }
    }

    private static StoreUnavailableException outage(String message) {
        return new StoreUnavailableException(message, new ConnectException("connection refused"));
    }

    private void checkClaimable(List<String> keys) {
        String key = refusedKey;
        if (key != null && keys.contains(key)) {
            throw new InvalidMessageIdException(refusalNamesKey ? key : null, "the test store cannot hold this key",
                    null);
        }
    }

    private void checkConfirmable(List<Claim> claims) {
        String key = refusedConfirmKey;
        if (key == null) {
            return;
        }
        for (Claim claim : claims) {
            if (key.equals(claim.messageId())) {
                refusedConfirms.incrementAndGet();
                throw new InvalidMessageIdException(key, "the test store cannot record this key", null);
            }
        }
    }

    private static List<String> ids(List<Claim> claims) {
        String[] ids = new String[claims.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = claims.get(i).messageId();
        }
        return Arrays.asList(ids);
    }

    private Claim granted(Claim claim) {
        if (claim.claimed()) {
            liveClaims.add(claim.messageId());
            claimed.incrementAndGet();
        }
        return claim;
    }

    private List<Claim> granted(List<Claim> claims) {
        claims.forEach(this::granted);
        return claims;
    }

    private LeasedIdempotencyStore leased() {
        if (leased == null) {
            throw new UnsupportedOperationException("the wrapped store " + delegate.getClass().getName()
                    + " is not a LeasedIdempotencyStore: give the consumer FaultInjectingStore.store()");
        }
        return leased;
    }

    // ---- IdempotencyStore ---------------------------------------------------------------------------------------

    @Override
    public boolean claim(String messageId) {
        enter(StoreOperation.CLAIM, "claim", Collections.singletonList(messageId));
        checkClaimable(List.of(messageId));
        boolean won = delegate.claim(messageId);
        if (won) {
            liveClaims.add(messageId);
            claimed.incrementAndGet();
        }
        return won;
    }

    @Override
    public ClaimResult tryClaim(String messageId) {
        enter(StoreOperation.CLAIM, "tryClaim", Collections.singletonList(messageId));
        checkClaimable(List.of(messageId));
        ClaimResult result = delegate.tryClaim(messageId);
        if (result == ClaimResult.CLAIMED) {
            liveClaims.add(messageId);
            claimed.incrementAndGet();
        }
        return result;
    }

    @Override
    public void confirm(String messageId) {
        enter(StoreOperation.CONFIRM, "confirm", Collections.singletonList(messageId));
        String key = refusedConfirmKey;
        if (messageId.equals(key)) {
            refusedConfirms.incrementAndGet();
            throw new InvalidMessageIdException(key, "the test store cannot record this key", null);
        }
        delegate.confirm(messageId);
        liveClaims.remove(messageId);
    }

    @Override
    public void release(String messageId) {
        enter(StoreOperation.RELEASE, "release", Collections.singletonList(messageId));
        liveClaims.remove(messageId);
        delegate.release(messageId);
    }

    @Override
    public boolean isConfirmed(String messageId) {
        enter(StoreOperation.PROBE, "isConfirmed", Collections.singletonList(messageId));
        return delegate.isConfirmed(messageId);
    }

    // ---- LeasedIdempotencyStore ---------------------------------------------------------------------------------

    @Override
    public Claim acquire(String messageId) {
        LeasedIdempotencyStore store = leased();
        enter(StoreOperation.CLAIM, "acquire", Collections.singletonList(messageId));
        checkClaimable(List.of(messageId));
        return granted(store.acquire(messageId));
    }

    @Override
    public Claim acquire(String messageId, String fingerprint) {
        LeasedIdempotencyStore store = leased();
        enter(StoreOperation.CLAIM, "acquire", Collections.singletonList(messageId));
        checkClaimable(List.of(messageId));
        return granted(store.acquire(messageId, fingerprint));
    }

    @Override
    public boolean recordsFingerprints() {
        return leased != null && leased.recordsFingerprints();
    }

    @Override
    public List<Claim> acquireAll(List<String> messageIds) {
        LeasedIdempotencyStore store = leased();
        enter(StoreOperation.CLAIM, "acquireAll", messageIds);
        checkClaimable(messageIds);
        return granted(store.acquireAll(messageIds));
    }

    @Override
    public List<Claim> acquireAll(List<String> messageIds, List<String> fingerprints) {
        LeasedIdempotencyStore store = leased();
        enter(StoreOperation.CLAIM, "acquireAll", messageIds);
        checkClaimable(messageIds);
        return granted(store.acquireAll(messageIds, fingerprints));
    }

    @Override
    public boolean renew(Claim claim) {
        LeasedIdempotencyStore store = leased();
        enter(StoreOperation.RENEW, "renew", Collections.singletonList(claim.messageId()));
        return store.renew(claim);
    }

    @Override
    public boolean confirm(Claim claim) {
        LeasedIdempotencyStore store = leased();
        enter(StoreOperation.CONFIRM, "confirm", Collections.singletonList(claim.messageId()));
        checkConfirmable(List.of(claim));
        boolean held = store.confirm(claim);
        liveClaims.remove(claim.messageId());
        return held;
    }

    @Override
    public List<Claim> confirmAll(List<Claim> claims) {
        LeasedIdempotencyStore store = leased();
        enter(StoreOperation.CONFIRM, "confirmAll", ids(claims));
        checkConfirmable(claims);
        List<Claim> lost = store.confirmAll(claims);
        claims.forEach(c -> liveClaims.remove(c.messageId()));
        return lost;
    }

    @Override
    public boolean release(Claim claim) {
        LeasedIdempotencyStore store = leased();
        enter(StoreOperation.RELEASE, "release", Collections.singletonList(claim.messageId()));
        liveClaims.remove(claim.messageId());
        return store.release(claim);
    }

    @Override
    public void releaseAll(List<Claim> claims) {
        LeasedIdempotencyStore store = leased();
        enter(StoreOperation.RELEASE, "releaseAll", ids(claims));
        claims.forEach(c -> liveClaims.remove(c.messageId()));
        store.releaseAll(claims);
    }

    @Override
    public int attempts(String messageId) {
        LeasedIdempotencyStore store = leased();
        if (down) {
            throw outage("test store is down");
        }
        return store.attempts(messageId);
    }

    @Override
    public boolean resetAttempts(String messageId) {
        LeasedIdempotencyStore store = leased();
        if (down) {
            throw outage("test store is down");
        }
        return store.resetAttempts(messageId);
    }

    @Override
    public Duration leaseDuration() {
        return leased().leaseDuration();
    }

    @Override
    public Duration retention() {
        return leased().retention();
    }

    /** The store the consumer sees when the wrapped one is plain: the same faults and records, no leases. */
    private final class PlainView implements IdempotencyStore {
        @Override
        public boolean claim(String messageId) {
            return FaultInjectingStore.this.claim(messageId);
        }

        @Override
        public ClaimResult tryClaim(String messageId) {
            return FaultInjectingStore.this.tryClaim(messageId);
        }

        @Override
        public void confirm(String messageId) {
            FaultInjectingStore.this.confirm(messageId);
        }

        @Override
        public void release(String messageId) {
            FaultInjectingStore.this.release(messageId);
        }

        @Override
        public boolean isConfirmed(String messageId) {
            return FaultInjectingStore.this.isConfirmed(messageId);
        }

        @Override
        public String toString() {
            return FaultInjectingStore.this.toString();
        }
    }
}
