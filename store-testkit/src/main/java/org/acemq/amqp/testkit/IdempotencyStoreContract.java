package org.acemq.amqp.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNoException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.Consumer;
import java.util.stream.Stream;

import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.api.LeasedIdempotencyStore;
import org.acemq.amqp.api.MessageIds;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.Timeout;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterTry;

/**
 * The contract every {@link LeasedIdempotencyStore} shipped with AceMQ must pass. A store's test extends this class,
 * implements the three abstract methods, and inherits every test: JUnit Jupiter tests for each rule of the contract,
 * two many-thread contention tests, and a jqwik property that runs random operation sequences of two owners against
 * a reference model of the contract.
 *
 * <h2>The SPI</h2>
 * <pre>{@code
 * class JdbcIdempotencyStoreTest extends IdempotencyStoreContract<JdbcIdempotencyStore> {
 *     protected JdbcIdempotencyStore createStore(Duration lease, Duration retention) { ... }  // over EMPTY state
 *     protected JdbcIdempotencyStore createPeer(JdbcIdempotencyStore first) { ... }          // same state, other owner
 *     protected void advanceTime(Duration amount) { ... }                                     // move the stores' "now"
 * }
 * }</pre>
 * <ul>
 *   <li>{@link #createStore} is called at the start of every test and of every property try, and must return a store
 *       over <em>empty</em> state (no identifier known): truncate the table, or build a new in-memory state.
 *       Within one test it is called once, except by the bad-input factory, which creates one store for all its
 *       dynamic tests.</li>
 *   <li>{@link #createPeer} returns a second store over the same state with a <em>different owner identity</em>,
 *       as another consumer process would have. It may be called several times for one {@code first} (a third
 *       party); each call must give a new owner. The kit never mixes owners of different {@code createStore}
 *       calls.</li>
 *   <li>{@link #advanceTime} moves the notion of "now" of every store created in the current test forward by
 *       {@code amount}. The kit only ever passes whole seconds, and uses leases of at least 10 s, so a store driven
 *       by the real wall clock can implement it by shifting its stored deadlines and expiry times back by
 *       {@code amount}; the few milliseconds of real time a test takes never cross a boundary the kit checks,
 *       because the kit checks "still live" at least one second before a deadline and "expired" at or after it.
 *       A lease granted at {@code t} is live while {@code now < t + lease}; a confirmation made at {@code t} is
 *       remembered while {@code now < t + retention}.</li>
 * </ul>
 * Optional hooks, with defaults: {@link #contentionThreads()} (16), {@link #contentionIds()} (10,000),
 * {@link #contentionTimeout()} (2 minutes), and {@link #closeStore} (does nothing; called for every created store at
 * the end of each test and property try).
 *
 * <h2>Running it</h2>
 * Name the subclass {@code *Test} (surefire) or {@code *IT} (failsafe); it must not be abstract. The property test
 * runs on the jqwik JUnit platform engine, which comes with this kit's {@code net.jqwik:jqwik} dependency; both
 * engines pick up the same class. jqwik writes a failure database to {@code .jqwik-database} in the working
 * directory unless told otherwise: put {@code jqwik.database = target/jqwik-database} in
 * {@code src/test/resources/junit-platform.properties}. A failing property is shrunk and reported with its operation
 * sequence and the model's possible states.
 *
 * <h2>Lifecycle</h2>
 * JUnit creates one instance per test method, jqwik one per property; the property creates fresh stores for every
 * try. Subclasses therefore keep per-test state (a mutable clock, a schema name) in instance fields assigned in
 * {@code createStore}, and shared expensive resources (a database, a connection pool) in static fields set up in
 * {@code @BeforeAll}.
 *
 * <h2>What the contract leaves open</h2>
 * The kit does not check: the attempt count reported for a confirmed identifier, whether confirming twice restarts
 * the retention, when (or whether) a released or lapsed-and-untouched identifier is forgotten as long as it is not
 * forgotten before {@code retention} has passed since it became idle, and whether the owner's own {@code renew} or
 * {@code release(Claim)} still acts on its lapsed lease that nobody took over. Everything else in the
 * {@link org.acemq.amqp.api.IdempotencyStore} and {@link LeasedIdempotencyStore} Javadoc is checked, including that
 * keys of different scopes ({@link MessageIds#scoped}) never meet, and the fingerprint rules: for a store whose
 * {@link LeasedIdempotencyStore#recordsFingerprints()} is true, single and batch calls, a repeated id in one batch and
 * what a peer reads back; for one that records none, claims without fingerprints and calls that still work. Under
 * contention an {@code IN_PROGRESS} claim may report no fingerprint (a store that cannot tell whose it would be), but
 * never another claim's than the holder's.
 *
 * @param <S> the store type under test
 */
public abstract class IdempotencyStoreContract<S extends LeasedIdempotencyStore> {

    /** The lease most tests use. */
    protected static final Duration LEASE = Duration.ofSeconds(10);
    /** The retention most tests use. */
    protected static final Duration RETENTION = Duration.ofSeconds(60);

    private static final Duration SECOND = Duration.ofSeconds(1);

    private final List<S> created = Collections.synchronizedList(new ArrayList<>());

    /** For subclasses. */
    protected IdempotencyStoreContract() {
    }

    /**
     * Creates a store over empty state.
     *
     * @param lease the lease duration the store must use ({@link LeasedIdempotencyStore#leaseDuration()})
     * @param retention the retention the store must use ({@link LeasedIdempotencyStore#retention()}); always longer
     *     than {@code lease}
     * @return a store that knows no identifier, with its own owner identity
     */
    protected abstract S createStore(Duration lease, Duration retention);

    /**
     * Creates another store over the same state as {@code first}, with the same lease and retention but a different
     * owner identity (another consumer process, as far as the contract is concerned).
     *
     * @param first a store returned by {@link #createStore} in the current test
     * @return a new peer; every call returns a new owner
     */
    protected abstract S createPeer(S first);

    /**
     * Moves the time seen by every store of the current test forward.
     *
     * @param amount a positive whole number of seconds
     */
    protected abstract void advanceTime(Duration amount);

    /** @return how many threads race in the contention tests; at least 16 by default */
    protected int contentionThreads() {
        return 16;
    }

    /** @return how many identifiers the contention tests race on */
    protected int contentionIds() {
        return 10_000;
    }

    /**
     * @return how long one contention test may take before it fails; for a slow backing store, raise this rather
     *     than lowering {@link #contentionIds()} below what shows races
     */
    protected Duration contentionTimeout() {
        return Duration.ofMinutes(2);
    }

    /**
     * Called for every store the kit created (including peers) when a test or property try ends.
     *
     * @param store a store from {@link #createStore} or {@link #createPeer}
     */
    protected void closeStore(S store) {
    }

    /** Closes the stores of the JUnit test that just ended. */
    @AfterEach
    protected final void closeStoresAfterEach() {
        closeAll();
    }

    /** Closes the stores of the property try that just ended. */
    @AfterTry
    protected final void closeStoresAfterTry() {
        closeAll();
    }

    private void closeAll() {
        List<S> stores;
        synchronized (created) {
            stores = new ArrayList<>(created);
            created.clear();
        }
        Collections.reverse(stores);
        for (S store : stores) {
            closeStore(store);
        }
    }

    private S store(Duration lease, Duration retention) {
        S store = createStore(lease, retention);
        assertThat(store).as("createStore").isNotNull();
        created.add(store);
        return store;
    }

    private S store() {
        return store(LEASE, RETENTION);
    }

    private S peer(S first) {
        S peer = createPeer(first);
        assertThat(peer).as("createPeer").isNotNull().isNotSameAs(first);
        created.add(peer);
        return peer;
    }

    private void advance(Duration amount) {
        advanceTime(amount);
    }

    /** Lets the lease of a claim made "now" run out: advances by exactly the lease. */
    private void lapse() {
        advance(LEASE);
    }

    // ================================================================= configuration

    @Test
    @DisplayName("leaseDuration() and retention() report what the store was created with")
    void reportsLeaseAndRetention() {
        S store = store(Duration.ofSeconds(17), Duration.ofSeconds(170));
        assertThat(store.leaseDuration()).isEqualTo(Duration.ofSeconds(17));
        assertThat(store.retention()).isEqualTo(Duration.ofSeconds(170));
        assertThat(peer(store).leaseDuration()).isEqualTo(Duration.ofSeconds(17));
    }

    // ================================================================= the three ClaimResult paths

    @Test
    @DisplayName("tryClaim: CLAIMED for a new id, IN_PROGRESS while claimed, ALREADY_CONFIRMED once confirmed")
    void tryClaimReportsAllThreeResults() {
        S store = store();
        S peer = peer(store);
        assertThat(store.tryClaim("order-1")).isEqualTo(ClaimResult.CLAIMED);
        assertThat(store.tryClaim("order-1")).as("same owner, live claim").isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(peer.tryClaim("order-1")).as("other owner, live claim").isEqualTo(ClaimResult.IN_PROGRESS);
        store.confirm("order-1");
        assertThat(store.tryClaim("order-1")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(peer.tryClaim("order-1")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(peer.tryClaim("order-2")).as("ids are independent").isEqualTo(ClaimResult.CLAIMED);
    }

    @Test
    @DisplayName("acquire: CLAIMED with attempt 1, IN_PROGRESS, ALREADY_CONFIRMED")
    void acquireReportsAllThreeResults() {
        S store = store();
        S peer = peer(store);
        Claim claim = store.acquire("order-1");
        assertThat(claim).isEqualTo(new Claim("order-1", ClaimResult.CLAIMED, 1));
        assertThat(claim.claimed()).isTrue();

        Claim busy = peer.acquire("order-1");
        assertThat(busy.result()).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(busy.messageId()).isEqualTo("order-1");
        assertThat(busy.attempt()).as("IN_PROGRESS reports the count so far, or 0").isIn(0, 1);
        assertThat(store.acquire("order-1").result()).isEqualTo(ClaimResult.IN_PROGRESS);

        assertThat(store.confirm(claim)).isTrue();
        Claim done = peer.acquire("order-1");
        assertThat(done.result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(done.messageId()).isEqualTo("order-1");
        assertThat(done.claimed()).isFalse();
    }

    @Test
    @DisplayName("claim() answers true only for the caller that now owns the id")
    void claimAnswersBoolean() {
        S store = store();
        S peer = peer(store);
        assertThat(store.claim("a")).isTrue();
        assertThat(store.claim("a")).isFalse();
        assertThat(peer.claim("a")).isFalse();
        store.confirm("a");
        assertThat(peer.claim("a")).isFalse();
        assertThat(store.claim("a")).isFalse();
        assertThat(peer.claim("b")).isTrue();
    }

    @Test
    @DisplayName("isConfirmed: false when unknown, claimed or released; true after confirm, for every owner")
    void isConfirmedFollowsConfirm() {
        S store = store();
        S peer = peer(store);
        assertThat(store.isConfirmed("a")).isFalse();
        store.acquire("a");
        assertThat(store.isConfirmed("a")).isFalse();
        assertThat(peer.isConfirmed("a")).isFalse();
        store.release("a");
        assertThat(store.isConfirmed("a")).isFalse();
        store.acquire("a");
        store.confirm("a");
        assertThat(store.isConfirmed("a")).isTrue();
        assertThat(peer.isConfirmed("a")).isTrue();
        assertThat(peer.isConfirmed("b")).isFalse();
    }

    @Test
    @DisplayName("confirm of an id nobody claimed still records completion")
    void confirmOfUnclaimedIdRecordsCompletion() {
        S store = store();
        S peer = peer(store);
        store.confirm("never-claimed");
        assertThat(peer.isConfirmed("never-claimed")).isTrue();
        assertThat(peer.tryClaim("never-claimed")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);

        // a Claim that names no lease this store granted: reported as not held, completion recorded all the same
        assertThat(store.confirm(new Claim("also-never-claimed", ClaimResult.CLAIMED, 1))).isFalse();
        assertThat(peer.isConfirmed("also-never-claimed")).isTrue();
        assertThat(peer.acquire("also-never-claimed").result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    @Test
    @DisplayName("confirm(Claim) of the live lease returns true; confirming twice is idempotent")
    void confirmOfLiveClaim() {
        S store = store();
        Claim claim = store.acquire("a");
        assertThat(store.confirm(claim)).isTrue();
        assertThat(store.isConfirmed("a")).isTrue();
        assertThatNoException().isThrownBy(() -> store.confirm("a"));
        store.confirm(claim);
        assertThat(store.isConfirmed("a")).isTrue();
        assertThat(store.tryClaim("a")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    // ================================================================= release and attempts

    @Test
    @DisplayName("release(String) makes the id claimable again and keeps the attempt count")
    void releaseByIdMakesClaimableAndKeepsAttempts() {
        S store = store();
        S peer = peer(store);
        store.acquire("a");
        store.release("a");
        assertThat(store.attempts("a")).isEqualTo(1);
        assertThat(peer.acquire("a")).isEqualTo(new Claim("a", ClaimResult.CLAIMED, 2));
        assertThat(store.attempts("a")).isEqualTo(2);
    }

    @Test
    @DisplayName("release(Claim) of the live lease returns true, makes the id claimable and keeps the count")
    void releaseByClaimMakesClaimableAndKeepsAttempts() {
        S store = store();
        Claim first = store.acquire("a");
        assertThat(store.release(first)).isTrue();
        assertThat(store.attempts("a")).isEqualTo(1);
        assertThat(store.isConfirmed("a")).isFalse();
        Claim second = store.acquire("a");
        assertThat(second).isEqualTo(new Claim("a", ClaimResult.CLAIMED, 2));
        assertThat(store.release(first)).as("the first lease is gone").isFalse();
        assertThat(store.release(second)).isTrue();
        assertThat(store.release(second)).as("released twice").isFalse();
        assertThat(store.tryClaim("a")).isEqualTo(ClaimResult.CLAIMED);
    }

    @Test
    @DisplayName("release of an id never claimed, or already confirmed, does nothing")
    void releaseOfUnheldIdDoesNothing() {
        S store = store();
        store.release("unknown");
        assertThat(store.attempts("unknown")).isZero();
        assertThat(store.acquire("unknown")).isEqualTo(new Claim("unknown", ClaimResult.CLAIMED, 1));

        Claim claim = store.acquire("done");
        store.confirm(claim);
        store.release("done");
        assertThat(store.release(claim)).isFalse();
        assertThat(store.isConfirmed("done")).isTrue();
        assertThat(store.tryClaim("done")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    @Test
    @DisplayName("release(String) by an owner that does not hold the live claim does nothing")
    void releaseByOtherOwnerDoesNothing() {
        S store = store();
        S peer = peer(store);
        Claim claim = store.acquire("a");
        peer.release("a");
        assertThat(peer.release(claim)).as("a claim of another owner").isFalse();
        assertThat(peer.tryClaim("a")).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(store.attempts("a")).isEqualTo(1);
        assertThat(store.confirm(claim)).isTrue();
    }

    @Test
    @DisplayName("attempts: 0 unknown, 1 first claim, 2 after release, 3 after takeover; refusals do not count")
    void attemptsCountEverySuccessfulClaim() {
        S store = store();
        S peer = peer(store);
        assertThat(store.attempts("a")).isZero();
        assertThat(store.acquire("a").attempt()).isEqualTo(1);
        assertThat(store.attempts("a")).isEqualTo(1);
        peer.tryClaim("a");
        peer.claim("a");
        assertThat(peer.acquire("a").claimed()).isFalse();
        assertThat(store.attempts("a")).as("refused claims are no attempts").isEqualTo(1);

        store.release("a");
        assertThat(peer.acquire("a")).isEqualTo(new Claim("a", ClaimResult.CLAIMED, 2));
        assertThat(store.attempts("a")).isEqualTo(2);

        lapse();
        assertThat(store.acquire("a")).as("takeover").isEqualTo(new Claim("a", ClaimResult.CLAIMED, 3));
        assertThat(peer.attempts("a")).isEqualTo(3);
        assertThat(peer.attempts("b")).isZero();
    }

    @Test
    @DisplayName("tryClaim and claim() count attempts exactly like acquire")
    void tryClaimAndClaimCountAttempts() {
        S store = store();
        assertThat(store.tryClaim("a")).isEqualTo(ClaimResult.CLAIMED);
        store.release("a");
        assertThat(store.claim("a")).isTrue();
        store.release("a");
        assertThat(store.acquire("a").attempt()).isEqualTo(3);
    }

    @Test
    @DisplayName("the attempt count is forgotten together with the confirmed id at the end of the retention")
    void attemptsAreForgottenWithTheId() {
        S store = store();
        store.acquire("a");
        store.release("a");
        Claim second = store.acquire("a");
        assertThat(second.attempt()).isEqualTo(2);
        store.confirm(second);
        advance(RETENTION);
        assertThat(store.attempts("a")).isZero();
        assertThat(store.acquire("a")).isEqualTo(new Claim("a", ClaimResult.CLAIMED, 1));
    }

    @Test
    @DisplayName("a released id keeps its attempt count for at least the retention")
    void releasedAttemptsSurviveWithinRetention() {
        S store = store();
        store.acquire("a");
        store.release("a");
        advance(RETENTION.minus(SECOND));
        assertThat(store.attempts("a")).isEqualTo(1);
        assertThat(store.acquire("a").attempt()).isEqualTo(2);
    }

    // ================================================================= leases, takeover and fencing

    @Test
    @DisplayName("a lease is live until its end; then a peer takes over with attempt + 1")
    void leaseExpiryLetsPeerTakeOver() {
        S store = store();
        S peer = peer(store);
        store.acquire("a");
        advance(LEASE.minus(SECOND));
        assertThat(peer.acquire("a").result()).as("1 s before the lease ends").isEqualTo(ClaimResult.IN_PROGRESS);
        advance(SECOND);
        assertThat(peer.acquire("a")).as("at the end of the lease").isEqualTo(new Claim("a", ClaimResult.CLAIMED, 2));
        assertThat(store.tryClaim("a")).as("the new lease is live").isEqualTo(ClaimResult.IN_PROGRESS);
    }

    @Test
    @DisplayName("after a takeover the old owner's release(String) and release(Claim) do nothing")
    void releaseIsFencedAfterTakeover() {
        S store = store();
        S peer = peer(store);
        S third = peer(store);
        Claim old = store.acquire("a");
        lapse();
        Claim taken = peer.acquire("a");
        assertThat(taken).isEqualTo(new Claim("a", ClaimResult.CLAIMED, 2));

        store.release("a");
        assertThat(store.release(old)).isFalse();

        assertThat(third.tryClaim("a")).as("the new owner still holds it").isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(store.tryClaim("a")).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(peer.attempts("a")).isEqualTo(2);
        assertThat(peer.renew(taken)).isTrue();
        assertThat(peer.release(taken)).isTrue();
        assertThat(third.acquire("a")).isEqualTo(new Claim("a", ClaimResult.CLAIMED, 3));
    }

    @Test
    @DisplayName("renew extends a live lease past its original end")
    void renewExtendsLiveLease() {
        S store = store();
        S peer = peer(store);
        Claim claim = store.acquire("a");
        advance(LEASE.minus(Duration.ofSeconds(2)));
        assertThat(store.renew(claim)).isTrue();
        advance(Duration.ofSeconds(3)); // renewed at LEASE - 2 s, so the lease now ends at 2 * LEASE - 2 s
        assertThat(peer.tryClaim("a")).as("1 s past the original end").isEqualTo(ClaimResult.IN_PROGRESS);
        advance(LEASE.minus(Duration.ofSeconds(4)));
        assertThat(peer.tryClaim("a")).as("1 s before the renewed end").isEqualTo(ClaimResult.IN_PROGRESS);
        advance(SECOND);
        assertThat(peer.acquire("a")).as("at the renewed end").isEqualTo(new Claim("a", ClaimResult.CLAIMED, 2));
    }

    @Test
    @DisplayName("renew of a lost lease returns false and changes nothing")
    void renewIsFenced() {
        S store = store();
        S peer = peer(store);
        S third = peer(store);
        Claim old = store.acquire("a");
        lapse();
        Claim taken = peer.acquire("a");
        assertThat(store.renew(old)).as("taken over").isFalse();
        advance(LEASE.minus(SECOND));
        assertThat(store.renew(old)).isFalse();
        advance(SECOND);
        assertThat(third.acquire("a")).as("the stale renew did not extend the new lease")
                .isEqualTo(new Claim("a", ClaimResult.CLAIMED, 3));
        assertThat(peer.renew(taken)).as("taken over in turn").isFalse();

        Claim released = store.acquire("b");
        store.release(released);
        assertThat(store.renew(released)).as("released").isFalse();
        assertThat(peer.acquire("b").attempt()).isEqualTo(2);

        Claim confirmed = store.acquire("c");
        store.confirm(confirmed);
        assertThat(store.renew(confirmed)).as("confirmed").isFalse();
        assertThat(peer.tryClaim("c")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    @Test
    @DisplayName("a stale Claim of the same owner cannot release or renew the same owner's newer lease")
    void staleAttemptOfSameOwnerIsFenced() {
        S store = store();
        S peer = peer(store);
        Claim old = store.acquire("a");
        lapse();
        Claim current = store.acquire("a");
        assertThat(current).as("the same instance takes over its own lapsed lease")
                .isEqualTo(new Claim("a", ClaimResult.CLAIMED, 2));
        assertThat(store.release(old)).isFalse();
        assertThat(peer.tryClaim("a")).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(store.renew(old)).isFalse();
        assertThat(store.release(current)).isTrue();
        assertThat(peer.acquire("a").attempt()).isEqualTo(3);
    }

    @Test
    @DisplayName("a stale confirm returns false but still records completion; the new owner cannot undo it")
    void staleConfirmStillRecordsCompletion() {
        S store = store();
        S peer = peer(store);
        Claim old = store.acquire("a");
        lapse();
        Claim taken = peer.acquire("a");
        assertThat(store.confirm(old)).isFalse();
        assertThat(peer.isConfirmed("a")).isTrue();
        assertThat(store.tryClaim("a")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);

        assertThat(peer.release(taken)).as("the new owner's release does nothing").isFalse();
        peer.release("a");
        assertThat(peer.renew(taken)).isFalse();
        assertThatNoException().isThrownBy(() -> peer.confirm(taken));
        assertThat(store.isConfirmed("a")).isTrue();
        assertThat(peer(store).tryClaim("a")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    @Test
    @DisplayName("confirm(Claim) of a lapsed lease nobody took over returns false but records completion")
    void confirmOfLapsedClaimRecordsCompletion() {
        S store = store();
        Claim claim = store.acquire("a");
        lapse();
        assertThat(store.confirm(claim)).isFalse();
        assertThat(store.isConfirmed("a")).isTrue();
        assertThat(peer(store).tryClaim("a")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    @Test
    @DisplayName("IN_PROGRESS never turns into ALREADY_CONFIRMED without a confirm")
    void inProgressNeverBecomesConfirmedOnItsOwn() {
        S store = store();
        S peer = peer(store);
        store.acquire("a");
        for (int second = 1; second < LEASE.toSeconds(); second++) {
            advance(SECOND);
            assertThat(peer.tryClaim("a")).isEqualTo(ClaimResult.IN_PROGRESS);
            assertThat(peer.isConfirmed("a")).isFalse();
        }
        advance(SECOND);
        assertThat(peer.tryClaim("a")).as("a lapsed lease is taken over, not confirmed")
                .isEqualTo(ClaimResult.CLAIMED);
        peer.release("a");
        advance(RETENTION.plus(LEASE));
        assertThat(store.isConfirmed("a")).isFalse();
        assertThat(store.tryClaim("a")).isEqualTo(ClaimResult.CLAIMED);
    }

    // ================================================================= retention

    @Test
    @DisplayName("a confirmed id is remembered for the retention, and claimable again from its end")
    void retentionExpiry() {
        S store = store();
        S peer = peer(store);
        store.confirm(store.acquire("a"));
        advance(RETENTION.minus(SECOND));
        assertThat(peer.isConfirmed("a")).isTrue();
        assertThat(peer.tryClaim("a")).as("1 s before the end of the retention")
                .isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(peer.claim("a")).isFalse();
        advance(SECOND);
        assertThat(peer.isConfirmed("a")).isFalse();
        assertThat(peer.acquire("a")).as("at the end of the retention").isEqualTo(new Claim("a", ClaimResult.CLAIMED, 1));
    }

    @Test
    @DisplayName("retention runs from the confirmation, not from the claim")
    void retentionCountsFromConfirmation() {
        S store = store();
        Claim claim = store.acquire("a");
        advance(LEASE.minus(SECOND));
        store.confirm(claim);
        advance(RETENTION.minus(SECOND));
        assertThat(store.tryClaim("a")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        advance(SECOND);
        assertThat(store.tryClaim("a")).isEqualTo(ClaimResult.CLAIMED);
    }

    // ================================================================= bad input

    /**
     * Every method taking an identifier or a claim rejects null with {@link NullPointerException} and blank or too
     * long identifiers with {@link IllegalArgumentException}, and accepts exactly {@link MessageIds#MAX_LENGTH}.
     *
     * @return one dynamic test per method and input
     */
    @TestFactory
    @DisplayName("bad input fails fast in every method")
    Stream<DynamicTest> badInputFailsFast() {
        S store = store();
        Map<String, Consumer<String>> byId = byIdOperations(store);
        Map<String, Consumer<Claim>> byClaim = byClaimOperations(store);
        String longest = "x".repeat(MessageIds.MAX_LENGTH);
        String tooLong = "x".repeat(MessageIds.MAX_LENGTH + 1);
        List<DynamicTest> tests = new ArrayList<>();
        byId.forEach((name, op) -> {
            tests.add(dynamicTest(name + "(null)", () -> assertThatThrownBy(() -> op.accept(null))
                    .isInstanceOf(NullPointerException.class)));
            for (String bad : List.of("", "  ", "\t\n", tooLong)) {
                tests.add(dynamicTest(name + "(" + describe(bad) + ")", () -> assertThatThrownBy(() -> op.accept(bad))
                        .isInstanceOf(IllegalArgumentException.class)));
            }
            tests.add(dynamicTest(name + "(512 chars) is accepted",
                    () -> assertThatNoException().isThrownBy(() -> op.accept(longest))));
        });
        byClaim.forEach((name, op) -> {
            tests.add(dynamicTest(name + "(null)", () -> assertThatThrownBy(() -> op.accept(null))
                    .isInstanceOf(NullPointerException.class)));
            for (String bad : List.of("", "  ", tooLong)) {
                tests.add(dynamicTest(name + "(Claim of " + describe(bad) + ")",
                        () -> assertThatThrownBy(() -> op.accept(new Claim(bad, ClaimResult.CLAIMED, 1)))
                                .isInstanceOf(IllegalArgumentException.class)));
            }
            tests.add(dynamicTest(name + "(Claim of 512 chars) is accepted", () -> assertThatNoException()
                    .isThrownBy(() -> op.accept(new Claim(longest, ClaimResult.CLAIMED, 1)))));
        });
        tests.add(dynamicTest("a 512-char id goes through the whole cycle", () -> {
            S fresh = peer(store);
            String id = "y".repeat(MessageIds.MAX_LENGTH);
            Claim claim = fresh.acquire(id);
            assertThat(claim.claimed()).isTrue();
            assertThat(fresh.confirm(claim)).isTrue();
            assertThat(fresh.isConfirmed(id)).isTrue();
            assertThat(fresh.isConfirmed(id.substring(1))).isFalse();
        }));
        return tests.stream();
    }

    /** @return every method of the store that takes one identifier, by name */
    private Map<String, Consumer<String>> byIdOperations(S store) {
        return Map.of(
                "claim", store::claim,
                "tryClaim", store::tryClaim,
                "acquire", store::acquire,
                "confirm(String)", store::confirm,
                "release(String)", store::release,
                "isConfirmed", store::isConfirmed,
                "attempts", store::attempts);
    }

    /** @return every method of the store that takes one claim, by name */
    private Map<String, Consumer<Claim>> byClaimOperations(S store) {
        return Map.of(
                "renew", store::renew,
                "confirm(Claim)", store::confirm,
                "release(Claim)", store::release);
    }

    private static String describe(String bad) {
        return bad.length() > 10 ? bad.length() + " chars" : "'" + bad.replace("\t", "\\t").replace("\n", "\\n") + "'";
    }

    // ================================================================= identifiers no store can hold

    /** Identifiers that {@link MessageIds#requireValid} refuses although they are neither blank nor too long. */
    private static final List<String> UNSTORABLE = List.of("s:j-nul\u0000byte", "s:lone-high-\uD83D",
            "s:\uDE00-lone-low", "s:\u0000");

    /**
     * A NUL character or an unpaired surrogate is refused by every method, exactly as {@link MessageIds#requireValid}
     * refuses it ({@link InvalidMessageIdException} with the same message, naming the id), nothing is written (not
     * even a cleaned-up variant of the id), and the store goes on working.
     *
     * @return one dynamic test per method and identifier
     */
    @TestFactory
    @DisplayName("ids with NUL or unpaired surrogates are refused identically by every method, nothing is written")
    Stream<DynamicTest> unstorableIdsAreRefusedIdentically() {
        S store = store();
        Map<String, Consumer<String>> byId = new java.util.LinkedHashMap<>(byIdOperations(store));
        byId.put("acquireAll", id -> store.acquireAll(List.of("s:fine-before", id, "s:fine-after")));
        byId.put("resetAttempts", id -> {
            if (supportsResetAttempts()) {
                store.resetAttempts(id);
            } else {
                MessageIds.requireValid(id);
            }
        });
        Map<String, Consumer<Claim>> byClaim = new java.util.LinkedHashMap<>(byClaimOperations(store));
        byClaim.put("confirmAll", c -> store.confirmAll(List.of(new Claim("s:fine-before", ClaimResult.CLAIMED, 1), c)));
        byClaim.put("releaseAll", c -> store.releaseAll(List.of(c, new Claim("s:fine-after", ClaimResult.CLAIMED, 1))));
        List<DynamicTest> tests = new ArrayList<>();
        for (String bad : UNSTORABLE) {
            byId.forEach((name, op) -> tests.add(dynamicTest(name + "(" + MessageIds.printable(bad) + ")",
                    () -> assertRefusedLikeRequireValid(bad, () -> op.accept(bad)))));
            byClaim.forEach((name, op) -> tests.add(dynamicTest(name + "(Claim of " + MessageIds.printable(bad) + ")",
                    () -> assertRefusedLikeRequireValid(bad,
                            () -> op.accept(new Claim(bad, ClaimResult.CLAIMED, 1))))));
        }
        tests.add(dynamicTest("nothing was written, not even a cleaned-up id, and the store still works", () -> {
            S other = peer(store);
            for (String written : List.of("s:fine-before", "s:fine-after", "s:j-nulbyte", "s:j-nul byte",
                    "s:lone-high-", "s:lone-high-?", "s:lone-high-\uFFFD", "s:-lone-low", "s:?-lone-low",
                    "s:\uFFFD-lone-low", "s:")) {
                assertThat(other.attempts(written)).as("attempts of '%s'", written).isZero();
                assertThat(other.isConfirmed(written)).as("'%s' confirmed", written).isFalse();
                assertThat(other.acquire(written)).as("'%s' is new", written)
                        .isEqualTo(new Claim(written, ClaimResult.CLAIMED, 1));
            }
            Claim next = store.acquire("s:next-message");
            assertThat(next).isEqualTo(new Claim("s:next-message", ClaimResult.CLAIMED, 1));
            assertThat(store.confirm(next)).isTrue();
            assertThat(other.tryClaim("s:next-message")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        }));
        return tests.stream();
    }

    private static void assertRefusedLikeRequireValid(String bad, Runnable call) {
        String expected = null;
        try {
            MessageIds.requireValid(bad);
        } catch (InvalidMessageIdException e) {
            expected = e.getMessage();
        }
        assertThat(expected).as("MessageIds.requireValid refuses it").isNotNull();
        String message = expected;
        assertThatThrownBy(call::run).isInstanceOfSatisfying(InvalidMessageIdException.class, e -> {
            assertThat(e.messageId()).as("the exception names the refused id").isEqualTo(bad);
            assertThat(e.getMessage()).as("the same message as MessageIds.requireValid").isEqualTo(message);
        });
    }

    // ================================================================= batches

    @Test
    @DisplayName("acquireAll answers in order exactly as acquire would, one id after the other")
    void acquireAllAnswersLikeAcquireInOrder() {
        S store = store();
        S peer = peer(store);
        store.confirm(store.acquire("done"));
        Claim busy = peer.acquire("busy");
        store.release(store.acquire("again"));
        List<Claim> claims = store.acquireAll(List.of("new-1", "done", "busy", "again", "new-1", "new-2"));
        assertThat(claims).hasSize(6);
        assertThat(claims.get(0)).isEqualTo(new Claim("new-1", ClaimResult.CLAIMED, 1));
        assertThat(claims.get(1).result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(claims.get(1).messageId()).isEqualTo("done");
        assertThat(claims.get(2).result()).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(claims.get(2).attempt()).as("IN_PROGRESS reports the count so far, or 0").isIn(0, 1);
        assertThat(claims.get(3)).as("claimed after a release").isEqualTo(new Claim("again", ClaimResult.CLAIMED, 2));
        assertThat(claims.get(4)).as("a duplicate in the same call is held by the call itself")
                .isEqualTo(new Claim("new-1", ClaimResult.IN_PROGRESS, 1));
        assertThat(claims.get(5)).isEqualTo(new Claim("new-2", ClaimResult.CLAIMED, 1));
        assertThat(store.attempts("new-1")).as("one claim, one attempt").isEqualTo(1);
        assertThat(peer.tryClaim("new-2")).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(peer.confirm(busy)).isTrue();

        lapse();
        assertThat(peer.acquireAll(List.of("new-2", "new-1")))
                .as("lapsed leases are taken over by a batch too")
                .containsExactly(new Claim("new-2", ClaimResult.CLAIMED, 2), new Claim("new-1", ClaimResult.CLAIMED, 2));
    }

    @Test
    @DisplayName("batch calls with empty lists do nothing")
    void emptyBatchesDoNothing() {
        S store = store();
        assertThat(store.acquireAll(List.of())).isEmpty();
        assertThat(store.confirmAll(List.of())).isEmpty();
        assertThatNoException().isThrownBy(() -> store.releaseAll(List.of()));
        assertThat(store.acquireAll(List.of("single"))).containsExactly(new Claim("single", ClaimResult.CLAIMED, 1));
    }

    @Test
    @DisplayName("confirmAll records every completion and returns exactly the claims whose lease was lost")
    void confirmAllRecordsEveryCompletionAndReportsLostLeases() {
        S store = store();
        S peer = peer(store);
        Claim lapsedTakenOver = store.acquire("c");
        Claim lapsedAlone = store.acquire("d");
        lapse();
        Claim takeover = peer.acquire("c");
        Claim a = store.acquire("a");
        Claim b = store.acquire("b");
        List<Claim> lost = store.confirmAll(List.of(a, lapsedTakenOver, b, lapsedAlone));
        assertThat(lost).containsExactly(lapsedTakenOver, lapsedAlone);
        for (String id : List.of("a", "b", "c", "d")) {
            assertThat(peer.isConfirmed(id)).as("%s confirmed", id).isTrue();
            assertThat(peer.tryClaim(id)).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        }
        assertThat(peer.release(takeover)).as("the new owner cannot undo it").isFalse();
        assertThat(store.confirmAll(List.of(new Claim("never-claimed", ClaimResult.CLAIMED, 1))))
                .as("a claim the store never granted is not held, and completion is recorded")
                .containsExactly(new Claim("never-claimed", ClaimResult.CLAIMED, 1));
        assertThat(peer.isConfirmed("never-claimed")).isTrue();
    }

    @Test
    @DisplayName("confirmAll with the same claim twice confirms it once and reports the repeat as lost")
    void confirmAllWithARepeatedClaim() {
        S store = store();
        Claim a = store.acquire("a");
        Claim b = store.acquire("b");
        assertThat(store.confirmAll(List.of(a, b, a))).containsExactly(a);
        assertThat(store.isConfirmed("a")).isTrue();
        assertThat(store.isConfirmed("b")).isTrue();
    }

    @Test
    @DisplayName("releaseAll releases the live leases only, keeps the counts, and leaves stale claims alone")
    void releaseAllReleasesLiveLeasesOnly() {
        S store = store();
        S peer = peer(store);
        Claim stale = store.acquire("c");
        lapse();
        Claim takeover = peer.acquire("c");
        Claim a = store.acquire("a");
        Claim b = store.acquire("b");
        Claim done = store.acquire("done");
        store.confirm(done);
        store.releaseAll(List.of(a, stale, b, done, new Claim("busy-elsewhere", ClaimResult.IN_PROGRESS, 0)));
        assertThat(peer.acquire("a")).isEqualTo(new Claim("a", ClaimResult.CLAIMED, 2));
        assertThat(peer.acquire("b")).isEqualTo(new Claim("b", ClaimResult.CLAIMED, 2));
        assertThat(store.tryClaim("c")).as("the new owner keeps its lease").isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(peer.confirm(takeover)).isTrue();
        assertThat(store.tryClaim("done")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(store.attempts("busy-elsewhere")).isZero();
    }

    @Test
    @DisplayName("a batch with one refused id claims, confirms or releases nothing and counts no attempt")
    void aRefusedIdFailsTheWholeBatchAndNothingElse() {
        S store = store();
        S peer = peer(store);
        Claim held = store.acquire("held");
        String bad = "s:nul\u0000";
        assertThatThrownBy(() -> store.acquireAll(List.of("first", "held", bad, "last")))
                .isInstanceOfSatisfying(InvalidMessageIdException.class, e -> assertThat(e.messageId()).isEqualTo(bad));
        assertThat(peer.attempts("first")).as("nothing claimed, no attempt counted").isZero();
        assertThat(peer.attempts("last")).isZero();
        assertThat(peer.acquireAll(List.of("first", "last"))).extracting(Claim::result)
                .containsExactly(ClaimResult.CLAIMED, ClaimResult.CLAIMED);

        assertThatThrownBy(() -> store.confirmAll(List.of(held, new Claim(bad, ClaimResult.CLAIMED, 1))))
                .isInstanceOfSatisfying(InvalidMessageIdException.class, e -> assertThat(e.messageId()).isEqualTo(bad));
        assertThat(peer.isConfirmed("held")).as("nothing confirmed").isFalse();
        assertThatThrownBy(() -> store.releaseAll(List.of(held, new Claim(bad, ClaimResult.CLAIMED, 1))))
                .isInstanceOf(InvalidMessageIdException.class);
        assertThat(peer.tryClaim("held")).as("nothing released").isEqualTo(ClaimResult.IN_PROGRESS);
        assertThatThrownBy(() -> store.acquireAll(java.util.Arrays.asList("first-null", null)))
                .isInstanceOf(NullPointerException.class);
        assertThat(peer.attempts("first-null")).isZero();
        assertThat(store.confirmAll(List.of(held))).isEmpty();
    }

    @Test
    @DisplayName("many threads mixing batch and single claims of the same ids (with duplicates in a batch): one CLAIMED")
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void exactlyOneClaimPerIdWithBatchAndSingleCallsMixed() throws Exception {
        S store = store(Duration.ofHours(1), Duration.ofHours(2));
        S peer = peer(store);
        int threads = Math.max(4, contentionThreads());
        int ids = contentionIds();
        AtomicIntegerArray claims = new AtomicIntegerArray(ids);
        ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
        race(threads, thread -> {
            S mine = thread % 2 == 0 ? store : peer;
            Random random = new Random(thread);
            List<Integer> round = new ArrayList<>();
            for (int i : aligned(ids, thread)) {
                if (thread % 4 >= 2) {
                    count(List.of(mine.acquire(id(i))), claims, problems);
                    continue;
                }
                round.add(i);
                if (round.size() == ROUND) {
                    flushBatches(mine, round, random, claims, problems);
                }
            }
            if (!round.isEmpty()) {
                flushBatches(mine, round, random, claims, problems);
            }
        });
        assertThat(problems).isEmpty();
        for (int i = 0; i < ids; i++) {
            assertThat(claims.get(i)).as("CLAIMED answers for %s", id(i)).isEqualTo(1);
        }
        assertThat(store.attempts(id(0))).isEqualTo(1);
        assertThat(peer.attempts(id(ids - 1))).isEqualTo(1);
    }

    /** Claims the ids of a round in up to three shuffled batches, one of them with a repeated id. */
    private void flushBatches(S store, List<Integer> round, Random random, AtomicIntegerArray claims,
                              ConcurrentLinkedQueue<String> problems) {
        List<String> names = new ArrayList<>();
        for (int i : round) {
            names.add(id(i));
        }
        round.clear();
        Collections.shuffle(names, random);
        int cut1 = random.nextInt(names.size() + 1);
        int cut2 = cut1 + random.nextInt(names.size() - cut1 + 1);
        for (List<String> part : List.of(names.subList(0, cut1), names.subList(cut1, cut2),
                names.subList(cut2, names.size()))) {
            List<String> batch = new ArrayList<>(part);
            if (!batch.isEmpty() && random.nextBoolean()) {
                batch.add(random.nextInt(batch.size() + 1), batch.get(random.nextInt(batch.size())));
            }
            List<Claim> answers = store.acquireAll(batch);
            if (answers.size() != batch.size()) {
                problems.add("acquireAll of " + batch.size() + " ids answered " + answers.size() + " claims");
            }
            for (int k = 0; k < answers.size(); k++) {
                if (!answers.get(k).messageId().equals(batch.get(k))) {
                    problems.add("answer " + k + " names " + answers.get(k).messageId() + ", not " + batch.get(k));
                }
            }
            count(answers, claims, problems);
        }
    }

    private static void count(List<Claim> answers, AtomicIntegerArray claims, ConcurrentLinkedQueue<String> problems) {
        for (Claim claim : answers) {
            int i = Integer.parseInt(claim.messageId().substring("contended-".length()));
            if (claim.result() == ClaimResult.CLAIMED) {
                claims.incrementAndGet(i);
            } else if (claim.result() == ClaimResult.ALREADY_CONFIRMED) {
                problems.add(claim.messageId() + " answered ALREADY_CONFIRMED though nobody confirmed it");
            }
        }
    }

    @Test
    @DisplayName("many threads claiming, confirming and releasing the same ids in batches never double-claim")
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void noDoubleClaimWithRacingBatchConfirmAndRelease() throws Exception {
        S store = store(Duration.ofHours(1), Duration.ofHours(2));
        S peer = peer(store);
        int threads = Math.max(2, contentionThreads());
        int ids = Math.max(ROUND, contentionIds() / 4);
        AtomicIntegerArray grants = new AtomicIntegerArray(ids);
        AtomicIntegerArray confirmed = new AtomicIntegerArray(ids);
        ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
        race(threads, thread -> {
            S mine = thread % 2 == 0 ? store : peer;
            Random random = new Random(thread);
            List<String> round = new ArrayList<>();
            for (int i : aligned(ids, thread)) {
                round.add(id(i));
                if (round.size() == 8) {
                    claimThenConfirmOrRelease(mine, round, random, grants, confirmed, problems);
                }
            }
            if (!round.isEmpty()) {
                claimThenConfirmOrRelease(mine, round, random, grants, confirmed, problems);
            }
        });
        assertThat(problems).isEmpty();
        for (int i = 0; i < ids; i++) {
            if (confirmed.get(i) != 0) {
                assertThat(peer.tryClaim(id(i))).as("%s", id(i)).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
            } else {
                assertThat(store.attempts(id(i))).as("attempts of %s", id(i)).isEqualTo(grants.get(i));
            }
        }
    }

    /** One batch round: claim the ids, then confirm a quarter of the claims and release the rest, in batches. */
    private void claimThenConfirmOrRelease(S store, List<String> round, Random random, AtomicIntegerArray grants,
                                           AtomicIntegerArray confirmed, ConcurrentLinkedQueue<String> problems) {
        List<Claim> toConfirm = new ArrayList<>();
        List<Claim> toRelease = new ArrayList<>();
        for (Claim claim : store.acquireAll(round)) {
            if (!claim.claimed()) {
                continue;
            }
            int index = Integer.parseInt(claim.messageId().substring("contended-".length()));
            int attempt = grants.incrementAndGet(index);
            if (confirmed.get(index) != 0) {
                problems.add(claim.messageId() + " was claimed after it was confirmed");
            }
            if (claim.attempt() != attempt) {
                problems.add(claim.messageId() + " got attempt " + claim.attempt() + " for grant " + attempt);
            }
            if (random.nextInt(4) == 0) {
                confirmed.set(index, 1);
                toConfirm.add(claim);
            } else {
                toRelease.add(claim);
            }
        }
        round.clear();
        List<Claim> lost = store.confirmAll(toConfirm);
        if (!lost.isEmpty()) {
            problems.add("confirmAll of live leases reported lost " + lost);
        }
        store.releaseAll(toRelease);
    }

    // ================================================================= resetting attempts

    /**
     * @return whether the store implements {@link LeasedIdempotencyStore#resetAttempts}; every store shipped with
     *     AceMQ does. A store that returns false here must throw {@link UnsupportedOperationException} from it.
     */
    protected boolean supportsResetAttempts() {
        return true;
    }

    @Test
    @DisplayName("resetAttempts forgets the count of a released id: its next claim is attempt 1")
    void resetAttemptsOfAReleasedId() {
        S store = store();
        S peer = peer(store);
        if (!supportsResetAttempts()) {
            assertThatThrownBy(() -> store.resetAttempts("a")).isInstanceOf(UnsupportedOperationException.class);
            return;
        }
        for (int i = 0; i < 3; i++) {
            assertThat(store.release(store.acquire("a"))).isTrue();
        }
        assertThat(store.attempts("a")).isEqualTo(3);
        assertThat(peer.resetAttempts("a")).isTrue();
        assertThat(store.attempts("a")).isZero();
        assertThat(peer.resetAttempts("a")).as("nothing left to reset").isFalse();
        assertThat(store.acquire("a")).isEqualTo(new Claim("a", ClaimResult.CLAIMED, 1));
        assertThat(store.resetAttempts("unknown")).isFalse();
        assertThat(store.attempts("unknown")).isZero();
    }

    @Test
    @DisplayName("resetAttempts leaves a confirmed id and a live lease alone")
    void resetAttemptsLeavesConfirmedAndLiveAlone() {
        S store = store();
        S peer = peer(store);
        if (!supportsResetAttempts()) {
            return;
        }
        store.release(store.acquire("done"));
        store.confirm(store.acquire("done"));
        assertThat(peer.resetAttempts("done")).isFalse();
        assertThat(peer.tryClaim("done")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);

        store.release(store.acquire("busy"));
        Claim live = store.acquire("busy");
        assertThat(peer.resetAttempts("busy")).isFalse();
        assertThat(store.attempts("busy")).isEqualTo(2);
        assertThat(peer.tryClaim("busy")).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(store.renew(live)).isTrue();
        assertThat(store.confirm(live)).isTrue();
    }

    @Test
    @DisplayName("resetAttempts of a lapsed lease forgets it; the old owner's renew and release then do nothing")
    void resetAttemptsOfALapsedLease() {
        S store = store();
        S peer = peer(store);
        if (!supportsResetAttempts()) {
            return;
        }
        store.release(store.acquire("a"));
        Claim lapsed = store.acquire("a");
        lapse();
        assertThat(peer.resetAttempts("a")).isTrue();
        assertThat(store.renew(lapsed)).isFalse();
        assertThat(store.release(lapsed)).isFalse();
        Claim fresh = peer.acquire("a");
        assertThat(fresh).isEqualTo(new Claim("a", ClaimResult.CLAIMED, 1));
        assertThat(store.confirm(lapsed)).as("a late confirm still records completion").isFalse();
        assertThat(peer.isConfirmed("a")).isTrue();
    }

    // ================================================================= scope isolation

    /**
     * Pairs of scopes whose keys must never meet: plain names, scopes that are prefixes of each other (with and without
     * the separator), and scopes holding the characters {@link MessageIds#scoped} escapes.
     */
    private static final List<List<String>> SCOPE_PAIRS = List.of(
            List.of("billing", "audit"),
            List.of("orders", "orders-dlq"),
            List.of("svc/orders", "svc"),
            List.of("a|b", "a"),
            List.of("50%", "50%25"),
            List.of("x%7Cy", "x|y"),
            List.of("topic#t1", "topic"));

    @Test
    @DisplayName("the same key in two scopes: claims, confirms, releases and attempts are independent")
    void scopesAreIndependentForSingleCalls() {
        S store = store();
        S peer = peer(store);
        for (List<String> pair : SCOPE_PAIRS) {
            String a = MessageIds.scoped(pair.get(0), "s:1");
            String b = MessageIds.scoped(pair.get(1), "s:1");
            assertThat(a).as("store keys of %s", pair).isNotEqualTo(b);
            assertThat(MessageIds.scopeOf(a)).isEqualTo(pair.get(0));
            assertThat(MessageIds.scopeOf(b)).isEqualTo(pair.get(1));

            Claim inA = store.acquire(a);
            assertThat(inA).as("first claim in %s", pair.get(0)).isEqualTo(new Claim(a, ClaimResult.CLAIMED, 1));
            Claim inB = peer.acquire(b);
            assertThat(inB).as("the same key in %s is not in progress", pair.get(1))
                    .isEqualTo(new Claim(b, ClaimResult.CLAIMED, 1));
            assertThat(store.confirm(inA)).isTrue();
            assertThat(peer.isConfirmed(b)).as("confirming in %s confirms nothing in %s", pair.get(0), pair.get(1))
                    .isFalse();
            assertThat(peer.release(inB)).isTrue();
            assertThat(store.isConfirmed(a)).isTrue();
            assertThat(store.tryClaim(a)).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
            assertThat(peer.acquire(b)).as("released in %s, claimable again", pair.get(1))
                    .isEqualTo(new Claim(b, ClaimResult.CLAIMED, 2));
            assertThat(store.attempts(a)).isEqualTo(1);
            assertThat(peer.attempts(b)).isEqualTo(2);
            peer.release(b);
            if (supportsResetAttempts()) {
                assertThat(store.resetAttempts(a)).as("a confirmed key is not reset").isFalse();
                assertThat(store.resetAttempts(b)).isTrue();
                assertThat(store.attempts(b)).isZero();
                assertThat(store.attempts(a)).as("resetting %s leaves %s alone", pair.get(1), pair.get(0))
                        .isEqualTo(1);
                assertThat(store.isConfirmed(a)).isTrue();
            }
            // the other way round: a confirm(String) in the second scope leaves a live claim in the first alone
            String c = MessageIds.scoped(pair.get(0), "s:2");
            String d = MessageIds.scoped(pair.get(1), "s:2");
            Claim inC = store.acquire(c);
            peer.confirm(d);
            assertThat(store.isConfirmed(c)).isFalse();
            assertThat(peer.acquire(c).result()).isEqualTo(ClaimResult.IN_PROGRESS);
            assertThat(store.release(inC)).isTrue();
            assertThat(store.attempts(c)).isEqualTo(1);
        }
    }

    @Test
    @DisplayName("the same key in two scopes within one batch: acquireAll, confirmAll and releaseAll keep them apart")
    void scopesAreIndependentInBatches() {
        S store = store();
        S peer = peer(store);
        List<String> keys = new ArrayList<>();
        for (List<String> pair : SCOPE_PAIRS) {
            keys.add(MessageIds.scoped(pair.get(0), "s:1"));
            keys.add(MessageIds.scoped(pair.get(1), "s:1"));
        }
        List<String> distinct = keys.stream().distinct().toList();
        assertThat(distinct).as("every scope of the pairs gives its own key").hasSize(keys.size());
        List<Claim> claims = store.acquireAll(distinct);
        for (int i = 0; i < distinct.size(); i++) {
            assertThat(claims.get(i)).isEqualTo(new Claim(distinct.get(i), ClaimResult.CLAIMED, 1));
        }
        List<Claim> even = new ArrayList<>();
        List<Claim> odd = new ArrayList<>();
        for (int i = 0; i < claims.size(); i++) {
            (i % 2 == 0 ? even : odd).add(claims.get(i));
        }
        assertThat(store.confirmAll(even)).isEmpty();
        store.releaseAll(odd);
        List<Claim> again = peer.acquireAll(distinct);
        for (int i = 0; i < distinct.size(); i++) {
            String key = distinct.get(i);
            if (i % 2 == 0) {
                assertThat(again.get(i).result()).as(key).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
                assertThat(peer.isConfirmed(key)).isTrue();
            } else {
                assertThat(again.get(i)).as(key).isEqualTo(new Claim(key, ClaimResult.CLAIMED, 2));
                assertThat(peer.isConfirmed(key)).isFalse();
            }
        }
    }

    // ================================================================= fingerprints

    /** A fingerprint as the runtime makes them: 32 hex characters. */
    private static String print(int n) {
        return String.format("%032x", n);
    }

    @Test
    @DisplayName("fingerprints: a claim records its own; IN_PROGRESS and ALREADY_CONFIRMED report the holder's")
    void fingerprintIsRecordedAndReported() {
        S store = store();
        S peer = peer(store);
        String id = MessageIds.scoped("orders", "s:o-1");
        Claim claim = store.acquire(id, print(1));
        assertThat(claim.result()).isEqualTo(ClaimResult.CLAIMED);
        if (!store.recordsFingerprints()) {
            assertThat(claim.fingerprint()).as("a store that records none reports none").isNull();
            Claim busy = peer.acquire(id, print(2));
            assertThat(busy.result()).isEqualTo(ClaimResult.IN_PROGRESS);
            assertThat(busy.fingerprint()).isNull();
            assertThat(store.confirm(claim)).isTrue();
            assertThat(peer.acquire(id, print(2)).fingerprint()).isNull();
            return;
        }
        assertThat(claim).isEqualTo(new Claim(id, ClaimResult.CLAIMED, 1, print(1)));
        Claim busy = peer.acquire(id, print(2));
        assertThat(busy.result()).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(busy.fingerprint()).as("the holder's fingerprint, seen by another store instance")
                .isEqualTo(print(1));
        assertThat(store.acquire(id).fingerprint()).as("asked without one").isEqualTo(print(1));
        assertThat(store.renew(claim)).isTrue();
        assertThat(store.confirm(claim)).isTrue();
        assertThat(peer.acquire(id, print(3))).as("confirm keeps it")
                .isEqualTo(new Claim(id, ClaimResult.ALREADY_CONFIRMED, peer.acquire(id).attempt(), print(1)));
        assertThat(store.acquire(id, print(1)).fingerprint()).isEqualTo(print(1));
        store.confirm(id);
        assertThat(peer.acquire(id).fingerprint()).as("a second confirm keeps it too").isEqualTo(print(1));

        String plain = MessageIds.scoped("orders", "s:o-2");
        assertThat(store.acquire(plain)).as("acquire(id) records none")
                .isEqualTo(new Claim(plain, ClaimResult.CLAIMED, 1, null));
        assertThat(peer.acquire(plain, print(4)).fingerprint()).isNull();

        String unclaimed = MessageIds.scoped("orders", "s:o-3");
        store.confirm(unclaimed);
        Claim done = peer.acquire(unclaimed, print(5));
        assertThat(done.result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(done.fingerprint()).as("confirm(String) of an unknown id records none").isNull();
    }

    @Test
    @DisplayName("fingerprints: a new claim after a release or a lapsed lease replaces the old one")
    void fingerprintIsReplacedByEveryNewClaim() {
        S store = store();
        S peer = peer(store);
        String id = MessageIds.scoped("orders", "s:o-1");
        Claim first = store.acquire(id, print(1));
        assertThat(store.release(first)).isTrue();
        Claim second = peer.acquire(id, print(2));
        if (!store.recordsFingerprints()) {
            assertThat(second).isEqualTo(new Claim(id, ClaimResult.CLAIMED, 2));
            return;
        }
        assertThat(second).as("re-claimed after a release").isEqualTo(new Claim(id, ClaimResult.CLAIMED, 2, print(2)));
        assertThat(store.acquire(id, print(1)).fingerprint()).isEqualTo(print(2));
        lapse();
        Claim third = store.acquire(id, null);
        assertThat(third).as("taken over without a fingerprint").isEqualTo(new Claim(id, ClaimResult.CLAIMED, 3, null));
        assertThat(peer.acquire(id, print(2)).fingerprint()).isNull();
        lapse();
        Claim fourth = store.acquire(id, print(4));
        assertThat(fourth).isEqualTo(new Claim(id, ClaimResult.CLAIMED, 4, print(4)));
        assertThat(peer.confirm(second)).as("a stale confirm records completion").isFalse();
        assertThat(peer.acquire(id, print(2))).as("and keeps the fingerprint the row holds")
                .isEqualTo(new Claim(id, ClaimResult.ALREADY_CONFIRMED, peer.acquire(id).attempt(), print(4)));
    }

    @Test
    @DisplayName("fingerprints: forgetting an id (resetAttempts, end of retention) forgets its fingerprint")
    void fingerprintIsForgottenWithTheId() {
        S store = store();
        S peer = peer(store);
        String reset = MessageIds.scoped("orders", "s:reset");
        String retained = MessageIds.scoped("orders", "s:retained");
        String confirmedLate = MessageIds.scoped("orders", "s:late");
        assertThat(store.release(store.acquire(reset, print(1)))).isTrue();
        assertThat(store.confirm(store.acquire(retained, print(2)))).isTrue();
        assertThat(store.confirm(store.acquire(confirmedLate, print(3)))).isTrue();
        if (supportsResetAttempts()) {
            assertThat(peer.resetAttempts(reset)).isTrue();
            store.acquire(reset, null);
            assertThat(peer.acquire(reset, print(9)).fingerprint()).as("after resetAttempts").isNull();
        }
        advance(RETENTION);
        Claim again = peer.acquire(retained, print(5));
        assertThat(again.result()).as("forgotten at the end of the retention").isEqualTo(ClaimResult.CLAIMED);
        assertThat(again.fingerprint()).isEqualTo(store.recordsFingerprints() ? print(5) : null);
        peer.confirm(confirmedLate);
        assertThat(store.acquire(confirmedLate, print(6)))
                .as("confirm(String) of a forgotten id records none")
                .isEqualTo(new Claim(confirmedLate, ClaimResult.ALREADY_CONFIRMED,
                        store.acquire(confirmedLate).attempt(), null));
    }

    @Test
    @DisplayName("fingerprints in acquireAll: each recorded with its id, a repeated id reports the first copy's")
    void fingerprintsInBatches() {
        S store = store();
        S peer = peer(store);
        String x = MessageIds.scoped("orders", "s:x");
        String y = MessageIds.scoped("orders", "s:y");
        String z = MessageIds.scoped("audit", "s:x");
        String done = MessageIds.scoped("orders", "s:done");
        String none = MessageIds.scoped("orders", "s:none");
        assertThat(store.confirm(store.acquire(done, print(7)))).isTrue();
        boolean records = store.recordsFingerprints();
        List<Claim> claims = store.acquireAll(List.of(x, y, x, z, done, none),
                java.util.Arrays.asList(print(1), print(2), print(3), print(4), print(8), null));
        assertThat(claims).containsExactly(
                new Claim(x, ClaimResult.CLAIMED, 1, records ? print(1) : null),
                new Claim(y, ClaimResult.CLAIMED, 1, records ? print(2) : null),
                new Claim(x, ClaimResult.IN_PROGRESS, 1, records ? print(1) : null),
                new Claim(z, ClaimResult.CLAIMED, 1, records ? print(4) : null),
                new Claim(done, ClaimResult.ALREADY_CONFIRMED, claims.get(4).attempt(), records ? print(7) : null),
                new Claim(none, ClaimResult.CLAIMED, 1, null));
        List<Claim> seen = peer.acquireAll(List.of(z, x, y), List.of(print(5), print(5), print(5)));
        assertThat(seen).extracting(Claim::result).containsOnly(ClaimResult.IN_PROGRESS);
        assertThat(seen).extracting(Claim::fingerprint).as("what another store instance reads back")
                .containsExactly(records ? print(4) : null, records ? print(1) : null, records ? print(2) : null);
        assertThat(store.confirmAll(List.of(claims.get(0), claims.get(1)))).isEmpty();
        store.releaseAll(List.of(claims.get(3)));
        List<Claim> after = peer.acquireAll(List.of(x, z, z), List.of(print(5), print(6), print(7)));
        assertThat(after).containsExactly(
                new Claim(x, ClaimResult.ALREADY_CONFIRMED, after.get(0).attempt(), records ? print(1) : null),
                new Claim(z, ClaimResult.CLAIMED, 2, records ? print(6) : null),
                new Claim(z, ClaimResult.IN_PROGRESS, 2, records ? print(6) : null));
        assertThat(peer.acquireAll(List.of(), List.of())).isEmpty();
    }

    @Test
    @DisplayName("fingerprint arguments are checked before anything is written")
    void badFingerprintsFailFast() {
        S store = store();
        String id = MessageIds.scoped("orders", "s:o-1");
        for (String bad : List.of("", " ", "x".repeat(MessageIds.MAX_FINGERPRINT_LENGTH + 1), "nul\u0000")) {
            if (store.recordsFingerprints()) {
                assertThatThrownBy(() -> store.acquire(id, bad)).as(describe(bad))
                        .isInstanceOf(IllegalArgumentException.class);
                assertThatThrownBy(() -> store.acquireAll(List.of(id, "s:other"), List.of(print(1), bad)))
                        .as(describe(bad)).isInstanceOf(IllegalArgumentException.class);
            }
        }
        assertThatThrownBy(() -> store.acquireAll(List.of(id, "s:other"), List.of(print(1))))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(store.attempts(id)).as("nothing was claimed").isZero();
        assertThat(store.attempts("s:other")).isZero();
        String longest = "f".repeat(MessageIds.MAX_FINGERPRINT_LENGTH);
        assertThat(store.acquire(id, longest).fingerprint()).isEqualTo(store.recordsFingerprints() ? longest : null);
    }

    @Test
    @DisplayName("many threads racing on the same ids with their own fingerprints: every reported fingerprint is the winner's")
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void racingClaimsReportTheWinnersFingerprint() throws Exception {
        S store = store(Duration.ofHours(1), Duration.ofHours(2));
        S peer = peer(store);
        int threads = Math.max(2, contentionThreads());
        int ids = Math.min(contentionIds(), 2_000);
        boolean records = store.recordsFingerprints();
        java.util.concurrent.atomic.AtomicReferenceArray<String> winners =
                new java.util.concurrent.atomic.AtomicReferenceArray<>(ids);
        ConcurrentLinkedQueue<String[]> seen = new ConcurrentLinkedQueue<>();
        race(threads, thread -> {
            S mine = thread % 2 == 0 ? store : peer;
            List<Integer> batch = new ArrayList<>();
            for (int i : aligned(ids, thread)) {
                if (thread % 3 != 0) {
                    record(i, mine.acquire(id(i), print(thread * ids + i)), print(thread * ids + i), records, winners,
                            seen);
                    continue;
                }
                batch.add(i);
                if (batch.size() == 4) {
                    List<String> keys = batch.stream().map(IdempotencyStoreContract::id).toList();
                    List<String> prints = batch.stream().map(n -> print(thread * ids + n)).toList();
                    List<Claim> answers = mine.acquireAll(keys, prints);
                    for (int k = 0; k < batch.size(); k++) {
                        record(batch.get(k), answers.get(k), prints.get(k), records, winners, seen);
                    }
                    batch.clear();
                }
            }
            if (!batch.isEmpty()) {
                List<String> prints = batch.stream().map(n -> print(thread * ids + n)).toList();
                List<Claim> answers = mine.acquireAll(batch.stream().map(IdempotencyStoreContract::id).toList(),
                        prints);
                for (int k = 0; k < batch.size(); k++) {
                    record(batch.get(k), answers.get(k), prints.get(k), records, winners, seen);
                }
            }
        });
        for (int i = 0; i < ids; i++) {
            assertThat(winners.get(i)).as("a winner for %s", id(i)).isNotNull();
        }
        for (String[] s : seen) {
            int i = Integer.parseInt(s[0]);
            if (records) {
                assertThat(s[1]).as("fingerprint reported for %s", id(i)).isIn(null, winners.get(i));
            } else {
                assertThat(s[1]).isNull();
            }
        }
        if (records) {
            for (int i = 0; i < ids; i += Math.max(1, ids / 50)) {
                assertThat(store.acquire(id(i)).fingerprint()).isEqualTo(winners.get(i));
            }
        }
    }

    private static void record(int i, Claim claim, String sent, boolean records,
                               java.util.concurrent.atomic.AtomicReferenceArray<String> winners,
                               ConcurrentLinkedQueue<String[]> seen) {
        if (claim.claimed()) {
            if (!java.util.Objects.equals(claim.fingerprint(), records ? sent : null)) {
                throw new AssertionError(id(i) + " CLAIMED with fingerprint " + claim.fingerprint() + ", sent " + sent);
            }
            if (!winners.compareAndSet(i, null, records ? sent : "(none)")) {
                throw new AssertionError(id(i) + " was claimed twice");
            }
        } else {
            seen.add(new String[] {String.valueOf(i), claim.fingerprint()});
        }
    }

    // ================================================================= model-based property with batches

    record AcquireAll(int owner, List<Integer> ids) implements BatchOp { }

    /** @param refs which of the owner's claims (see {@link ConfirmClaim}); repeats are dropped */
    record ConfirmAll(int owner, List<Integer> refs) implements BatchOp { }

    record ReleaseAll(int owner, List<Integer> refs) implements BatchOp { }

    record ResetAttempts(int owner, int id) implements BatchOp { }

    /** A step of {@link #batchesBehaveLikeTheModel}: a batch operation or any single one. */
    sealed interface BatchOp permits AcquireAll, ConfirmAll, ReleaseAll, ResetAttempts, Single { }

    record Single(Op op) implements BatchOp { }

    /**
     * Random sequences mixing the batch operations (and {@code resetAttempts}) with the single ones must give only
     * answers the reference model allows: a batch behaves as its operations one after the other, in order.
     *
     * @param ops the scenario
     */
    @Property(tries = 150, shrinking = net.jqwik.api.ShrinkingMode.FULL)
    void batchesBehaveLikeTheModel(@ForAll("batchScenarios") List<BatchOp> ops) {
        runScenario(ops, this::runBatch);
    }

    private void runBatch(BatchOp op, List<S> owners, List<List<Claim>> claims, ContractModel model) {
        if (op instanceof Single s) {
            run(s.op(), owners, claims, model);
        } else if (op instanceof AcquireAll a) {
            List<String> ids = a.ids().stream().map(IdempotencyStoreContract::key).toList();
            // every third without a fingerprint; a repeated id is sent with another fingerprint than its first copy
            List<String> prints = new ArrayList<>();
            for (int i = 0; i < ids.size(); i++) {
                prints.add(i % 3 == 2 ? null : print(100 + 10 * a.owner() + i));
            }
            boolean withPrints = a.ids().size() % 2 == 0;
            List<Claim> answers = withPrints ? owners.get(a.owner()).acquireAll(ids, prints)
                    : owners.get(a.owner()).acquireAll(ids);
            assertThat(answers).hasSize(ids.size());
            for (int i = 0; i < ids.size(); i++) {
                assertThat(answers.get(i).messageId()).isEqualTo(ids.get(i));
                model.acquire(a.owner(), ids.get(i), withPrints ? prints.get(i) : null, answers.get(i), c -> c);
                if (answers.get(i).claimed()) {
                    claims.get(a.owner()).add(answers.get(i));
                }
            }
        } else if (op instanceof ConfirmAll c) {
            List<Claim> picked = picked(claims.get(c.owner()), c.refs());
            List<Claim> lost = owners.get(c.owner()).confirmAll(picked);
            for (Claim claim : picked) {
                model.confirmClaim(c.owner(), claim, !lost.contains(claim));
            }
            assertThat(picked).as("lost claims are claims of the call").containsAll(lost);
        } else if (op instanceof ReleaseAll r) {
            List<Claim> picked = picked(claims.get(r.owner()), r.refs());
            owners.get(r.owner()).releaseAll(picked);
            for (Claim claim : picked) {
                model.releaseClaimUnobserved(r.owner(), claim);
            }
        } else if (op instanceof ResetAttempts r) {
            if (supportsResetAttempts()) {
                model.resetAttempts(key(r.id()), owners.get(r.owner()).resetAttempts(key(r.id())));
            }
        }
    }

    /** @return the distinct claims named by {@code refs} (claims of one id may differ in attempt) */
    private static List<Claim> picked(List<Claim> claims, List<Integer> refs) {
        List<Claim> picked = new ArrayList<>();
        for (int ref : refs) {
            Claim claim = pick(claims, ref);
            if (claim != null && !picked.contains(claim)) {
                picked.add(claim);
            }
        }
        return picked;
    }

    /** @return random scenarios for {@link #batchesBehaveLikeTheModel} */
    @Provide
    Arbitrary<List<BatchOp>> batchScenarios() {
        Arbitrary<Integer> owner = Arbitraries.integers().between(0, 1);
        Arbitrary<Integer> id = Arbitraries.integers().between(0, MODEL_IDS - 1);
        Arbitrary<List<Integer>> ids = id.list().ofMinSize(0).ofMaxSize(5);
        Arbitrary<List<Integer>> refs = Arbitraries.integers().between(0, 3).list().ofMinSize(0).ofMaxSize(4);
        return Arbitraries.<BatchOp>frequencyOf(
                Tuple.of(6, Combinators.combine(owner, ids).as(AcquireAll::new)),
                Tuple.of(4, Combinators.combine(owner, refs).as(ConfirmAll::new)),
                Tuple.of(4, Combinators.combine(owner, refs).as(ReleaseAll::new)),
                Tuple.of(3, Combinators.combine(owner, id).as(ResetAttempts::new)),
                Tuple.of(12, singleOps().map(Single::new)))
                .list().ofMinSize(1).ofMaxSize(50);
    }

    // ================================================================= contention

    @Test
    @DisplayName("many threads of two owners racing on the same ids: exactly one CLAIMED per id")
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void exactlyOneClaimPerIdUnderContention() throws Exception {
        S store = store(Duration.ofHours(1), Duration.ofHours(2));
        S peer = peer(store);
        int threads = Math.max(2, contentionThreads());
        int ids = contentionIds();
        AtomicIntegerArray claims = new AtomicIntegerArray(ids);
        AtomicIntegerArray refusals = new AtomicIntegerArray(ids);
        ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
        race(threads, thread -> {
            S mine = thread % 2 == 0 ? store : peer;
            for (int i : aligned(ids, thread)) {
                ClaimResult result = thread % 3 == 0 ? mine.acquire(id(i)).result() : mine.tryClaim(id(i));
                if (result == ClaimResult.CLAIMED) {
                    claims.incrementAndGet(i);
                } else if (result == ClaimResult.IN_PROGRESS) {
                    refusals.incrementAndGet(i);
                } else {
                    problems.add(id(i) + " answered " + result + " though nobody confirmed it");
                }
            }
        });
        assertThat(problems).isEmpty();
        for (int i = 0; i < ids; i++) {
            assertThat(claims.get(i)).as("CLAIMED answers for %s", id(i)).isEqualTo(1);
            assertThat(refusals.get(i)).as("IN_PROGRESS answers for %s", id(i)).isEqualTo(threads - 1);
        }
        assertThat(store.attempts(id(0))).isEqualTo(1);
        assertThat(peer.attempts(id(ids - 1))).isEqualTo(1);
    }

    @Test
    @DisplayName("many threads racing acquire/confirm/release on the same ids never double-claim")
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void noDoubleClaimWithRacingConfirmAndRelease() throws Exception {
        S store = store(Duration.ofHours(1), Duration.ofHours(2));
        S peer = peer(store);
        int threads = Math.max(2, contentionThreads());
        int ids = contentionIds();
        AtomicIntegerArray holders = new AtomicIntegerArray(ids);
        AtomicIntegerArray grants = new AtomicIntegerArray(ids);
        AtomicIntegerArray confirmed = new AtomicIntegerArray(ids);
        ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
        race(threads, thread -> {
            S mine = thread % 2 == 0 ? store : peer;
            Random random = new Random(thread);
            for (int i : aligned(ids, thread)) {
                Claim claim = mine.acquire(id(i));
                if (!claim.claimed()) {
                    continue;
                }
                int attempt = grants.incrementAndGet(i);
                if (holders.getAndIncrement(i) != 0) {
                    problems.add(id(i) + " was claimed twice at once");
                }
                if (confirmed.get(i) != 0) {
                    problems.add(id(i) + " was claimed after it was confirmed");
                }
                if (claim.attempt() != attempt) {
                    problems.add(id(i) + " got attempt " + claim.attempt() + " for grant " + attempt);
                }
                // give the id up before the store does, so that the next grant can never be counted as overlapping
                holders.decrementAndGet(i);
                if (random.nextInt(4) == 0) {
                    confirmed.set(i, 1);
                    if (!mine.confirm(claim)) {
                        problems.add(id(i) + ": confirm of a live lease answered false");
                    }
                } else if (!mine.release(claim)) {
                    problems.add(id(i) + ": release of a live lease answered false");
                }
            }
        });
        assertThat(problems).isEmpty();
        for (int i = 0; i < ids; i++) {
            assertThat(grants.get(i)).as("grants for %s", id(i)).isBetween(1, threads);
            if (confirmed.get(i) != 0) {
                assertThat(store.isConfirmed(id(i))).as("%s confirmed", id(i)).isTrue();
                assertThat(peer.tryClaim(id(i))).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
            } else {
                assertThat(store.attempts(id(i))).as("attempts of %s", id(i)).isEqualTo(grants.get(i));
            }
        }
    }

    private static String id(int i) {
        return "contended-" + i;
    }

    /** Ids per round; all threads wait for each other between rounds, so they stay on the same few ids. */
    private static final int ROUND = 64;

    /**
     * The order in which a thread visits the ids: the same rounds for every thread, so that all threads race on
     * the same ids at the same time; within a round, half the threads go forwards and half backwards, so that the
     * collisions happen both on the first touch of an id and on ids other threads are already working on.
     */
    private Iterable<Integer> aligned(int count, int thread) {
        return () -> new java.util.Iterator<>() {
            private int next;

            @Override
            public boolean hasNext() {
                return next < count;
            }

            @Override
            public Integer next() {
                if (next % ROUND == 0) {
                    awaitRound();
                }
                int roundStart = next - next % ROUND;
                int roundEnd = Math.min(count, roundStart + ROUND);
                int offset = next - roundStart;
                next++;
                return thread % 4 == 3 ? roundEnd - 1 - offset : roundStart + offset;
            }
        };
    }

    private volatile CyclicBarrier rounds;

    private void awaitRound() {
        try {
            rounds.await(contentionTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the other racing threads", e);
        } catch (java.util.concurrent.BrokenBarrierException | java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("another racing thread failed or hung", e);
        }
    }

    private interface ThreadBody {
        void run(int thread) throws Exception;
    }

    private void race(int threads, ThreadBody body) throws Exception {
        CyclicBarrier start = new CyclicBarrier(threads);
        rounds = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                futures.add(pool.submit(() -> {
                    start.await();
                    try {
                        body.run(thread);
                    } catch (Exception | Error e) {
                        rounds.reset();
                        throw e;
                    }
                    return null;
                }));
            }
            long deadline = System.nanoTime() + contentionTimeout().toNanos();
            for (Future<?> future : futures) {
                future.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    // ================================================================= model-based property

    /** One step of a random scenario; owners are 0 (the first store) and 1 (its peer). */
    sealed interface Op permits Acquire, TryClaim, ClaimBool, ConfirmId, ConfirmClaim, ReleaseId, ReleaseClaim,
            Renew, IsConfirmed, Attempts, Advance {
    }

    /** @param print the fingerprint passed: 0 none ({@code acquire(id)}), else {@code print(n)} */
    record Acquire(int owner, int id, int print) implements Op { }

    record TryClaim(int owner, int id) implements Op { }

    record ClaimBool(int owner, int id) implements Op { }

    record ConfirmId(int owner, int id) implements Op { }

    /** @param ref which of the owner's claims, counting back from its most recent one (modulo their number) */
    record ConfirmClaim(int owner, int ref) implements Op { }

    record ReleaseId(int owner, int id) implements Op { }

    record ReleaseClaim(int owner, int ref) implements Op { }

    record Renew(int owner, int ref) implements Op { }

    record IsConfirmed(int owner, int id) implements Op { }

    record Attempts(int owner, int id) implements Op { }

    record Advance(int seconds) implements Op { }

    private static final int MODEL_LEASE = 10;
    private static final int MODEL_RETENTION = 30;
    private static final int MODEL_IDS = 3;

    /**
     * Random sequences of every operation by two owners over three ids, with time moving by whole seconds around the
     * lease (10 s) and retention (30 s) boundaries, must give only answers the {@linkplain ContractModel reference
     * model} allows.
     *
     * @param ops the scenario
     */
    @Property(tries = 300, shrinking = net.jqwik.api.ShrinkingMode.FULL)
    void behavesLikeTheModel(@ForAll("scenarios") List<Op> ops) {
        runScenario(ops, this::run);
    }

    /** Runs one step of a scenario against the stores of both owners and the model. */
    private interface Step<T, X> {
        void run(T op, List<X> owners, List<List<Claim>> claims, ContractModel model);
    }

    /** Runs a scenario on a fresh store and its peer, step by step, against a fresh model. */
    private <T> void runScenario(List<T> ops, Step<T, S> steps) {
        S first = store(Duration.ofSeconds(MODEL_LEASE), Duration.ofSeconds(MODEL_RETENTION));
        List<S> owners = List.of(first, peer(first));
        List<List<Claim>> claims = List.of(new ArrayList<>(), new ArrayList<>());
        ContractModel model = new ContractModel(MODEL_LEASE, MODEL_RETENTION, first.recordsFingerprints());
        int step = 0;
        for (T op : ops) {
            step++;
            try {
                steps.run(op, owners, claims, model);
            } catch (AssertionError e) {
                throw new AssertionError("step " + step + " " + op + ": " + e.getMessage() + "\n" + model.describe()
                        + "\nscenario: " + ops, e);
            }
        }
    }

    private void run(Op op, List<S> owners, List<List<Claim>> claims, ContractModel model) {
        if (op instanceof Acquire a) {
            String print = a.print() == 0 ? null : print(a.print());
            Claim claim = print == null ? owners.get(a.owner()).acquire(key(a.id()))
                    : owners.get(a.owner()).acquire(key(a.id()), print);
            model.acquire(a.owner(), key(a.id()), print, claim, c -> c);
            if (claim.claimed()) {
                claims.get(a.owner()).add(claim);
            }
        } else if (op instanceof TryClaim t) {
            ClaimResult result = owners.get(t.owner()).tryClaim(key(t.id()));
            model.acquire(t.owner(), key(t.id()), result, Claim::result);
        } else if (op instanceof ClaimBool c) {
            boolean result = owners.get(c.owner()).claim(key(c.id()));
            model.acquire(c.owner(), key(c.id()), result, Claim::claimed);
        } else if (op instanceof ConfirmId c) {
            owners.get(c.owner()).confirm(key(c.id()));
            model.confirmId(key(c.id()));
        } else if (op instanceof ReleaseId r) {
            owners.get(r.owner()).release(key(r.id()));
            model.releaseId(r.owner(), key(r.id()));
        } else if (op instanceof IsConfirmed i) {
            model.isConfirmed(key(i.id()), owners.get(i.owner()).isConfirmed(key(i.id())));
        } else if (op instanceof Attempts a) {
            model.attempts(key(a.id()), owners.get(a.owner()).attempts(key(a.id())));
        } else if (op instanceof Advance a) {
            advance(Duration.ofSeconds(a.seconds()));
            model.advance(a.seconds());
        } else if (op instanceof ConfirmClaim c) {
            Claim claim = pick(claims.get(c.owner()), c.ref());
            if (claim != null) {
                model.confirmClaim(c.owner(), claim, owners.get(c.owner()).confirm(claim));
            }
        } else if (op instanceof ReleaseClaim r) {
            Claim claim = pick(claims.get(r.owner()), r.ref());
            if (claim != null) {
                model.releaseClaim(r.owner(), claim, owners.get(r.owner()).release(claim));
            }
        } else if (op instanceof Renew r) {
            Claim claim = pick(claims.get(r.owner()), r.ref());
            if (claim != null) {
                model.renew(r.owner(), claim, owners.get(r.owner()).renew(claim));
            }
        } else {
            throw new IllegalStateException("unknown op " + op);
        }
    }

    private static Claim pick(List<Claim> claims, int ref) {
        return claims.isEmpty() ? null : claims.get(claims.size() - 1 - ref % claims.size());
    }

    private static String key(int id) {
        return "m-" + id;
    }

    /** @return random scenarios for {@link #behavesLikeTheModel} */
    @Provide
    Arbitrary<List<Op>> scenarios() {
        return singleOps().list().ofMinSize(1).ofMaxSize(60);
    }

    /** @return one random single-id operation, as {@link #scenarios} draws them */
    private static Arbitrary<Op> singleOps() {
        Arbitrary<Integer> owner = Arbitraries.integers().between(0, 1);
        Arbitrary<Integer> id = Arbitraries.integers().between(0, MODEL_IDS - 1);
        Arbitrary<Integer> ref = Arbitraries.integers().between(0, 3);
        Arbitrary<Op> advance = Arbitraries.of(1, 2, 5, 9, 10, 11, 20, 29, 30, 31).map(Advance::new);
        return Arbitraries.frequencyOf(
                Tuple.of(8, Combinators.combine(owner, id, Arbitraries.integers().between(0, 3)).as(Acquire::new)),
                Tuple.of(2, Combinators.combine(owner, id).as(TryClaim::new)),
                Tuple.of(2, Combinators.combine(owner, id).as(ClaimBool::new)),
                Tuple.of(3, Combinators.combine(owner, id).as(ConfirmId::new)),
                Tuple.of(4, Combinators.combine(owner, ref).as(ConfirmClaim::new)),
                Tuple.of(3, Combinators.combine(owner, id).as(ReleaseId::new)),
                Tuple.of(4, Combinators.combine(owner, ref).as(ReleaseClaim::new)),
                Tuple.of(4, Combinators.combine(owner, ref).as(Renew::new)),
                Tuple.of(3, Combinators.combine(owner, id).as(IsConfirmed::new)),
                Tuple.of(3, Combinators.combine(owner, id).as(Attempts::new)),
                Tuple.of(6, advance));
    }
}
