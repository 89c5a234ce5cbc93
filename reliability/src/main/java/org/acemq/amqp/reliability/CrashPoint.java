package org.acemq.amqp.reliability;

import java.util.Locale;

/** Where a consumer process halts ({@code Runtime.halt(137)}, no shutdown hooks: as close to kill -9 as Java gets). */
enum CrashPoint {
    /** Right after the store's acquire returned CLAIMED, before the handler ran. */
    AFTER_CLAIM,
    /** In the handler: separate mode after the effect row was written; transactional mode before the commit. */
    MID_HANDLER,
    /** Right after the store's confirm returned, before the delivery is settled. */
    AFTER_CONFIRM,
    /** Right after the delivery was settled accepted (observer.settled). */
    AFTER_SETTLE,
    /**
     * Not a crash: in the handler (after the effect in separate mode), the process SIGSTOPs itself; the harness sends
     * SIGCONT after twice the lease. Meanwhile the broker drops the silent connection, another consumer takes the
     * lapsed claim over, and the paused one's confirm later finds its lease lost.
     */
    PAUSE_MID_HANDLER;

    String label() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    static CrashPoint parse(String label) {
        return valueOf(label.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
    }
}
