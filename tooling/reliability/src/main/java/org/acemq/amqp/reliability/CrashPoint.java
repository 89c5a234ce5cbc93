package org.acemq.amqp.reliability;

import java.util.Locale;

/**
 * Where a consumer process halts ({@code Runtime.halt(137)}, no shutdown hooks: as close to kill -9 as Java gets), or,
 * for {@link #AFTER_COMMIT}, sends itself SIGKILL.
 */
enum CrashPoint {
    /** Right after the store's acquire returned CLAIMED, before the handler ran. */
    AFTER_CLAIM,
    /**
     * In the handler. Separate mode: after the effect row was committed (autocommit). Transactional mode: in
     * {@code commit()} (see {@link CommitCrash}), after the effect insert and the store's in-transaction
     * confirm, before the commit, so neither may survive.
     */
    MID_HANDLER,
    /**
     * Right after the store's confirm returned, before the delivery is settled. Transactional mode: right after the
     * handler's transaction committed (it holds the confirm; see {@link CommitCrash}).
     */
    AFTER_CONFIRM,
    /** Right after the delivery was settled accepted (observer.settled). */
    AFTER_SETTLE,
    /**
     * Not a crash: in the handler, after the effect insert (separate mode: committed; transactional mode: inside the
     * open transaction, before the in-transaction confirm), the process SIGSTOPs itself; the harness sends SIGCONT
     * after twice the lease. Meanwhile the broker drops the silent connection and another consumer takes the lapsed
     * claim over. Separate mode: the paused one's confirm later finds its lease lost. Transactional mode: both run
     * the work, whichever confirms second finds the id confirmed and rolls its work back.
     */
    PAUSE_MID_HANDLER,
    /**
     * Transactional handlers only ({@link CommitCrash#afterCommit}): right after the handler's transaction committed
     * its rows, the confirm and the outbox rows of what it sent, before the runtime dispatches them and settles the
     * incoming message. The process sends itself SIGKILL. Used by the chain test ({@link ChainHarness}).
     */
    AFTER_COMMIT;

    String label() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    static CrashPoint parse(String label) {
        return valueOf(label.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
    }
}
