package org.acemq.amqp.consumer;

/**
 * How deliveries are acknowledged to the broker. The choice decides what is guaranteed; see the README's
 * "Delivery guarantees".
 */
public enum AcknowledgementMode {

    /**
     * The default. The receiver attaches with sender-settle-mode {@code unsettled}; each delivery is settled only
     * after the handler's outcome is known and, on success, after the store has recorded the confirmation. A crash
     * at any point leads to a redelivery, which the store absorbs: the handler's effects happen at least once, and
     * exactly once as long as the store remembers the message and the handler itself completed before the crash.
     */
    AT_LEAST_ONCE,

    /**
     * The receiver attaches with sender-settle-mode {@code settled}: the broker settles every message as it sends
     * it and forgets it, so nothing is acknowledged. A broker that ignores the settled mode and sends a transfer
     * unsettled gets {@code accepted} (or {@code rejected} for bad input) once the message is handled, so that it is
     * not left acquired. The store still de-duplicates (a copy whose work is confirmed or in progress is skipped), but
     * a message whose handler fails, or that is in flight when the process dies, is <b>lost</b>. Use only where losing
     * messages is acceptable and speed matters more. Messages already received when the consumer closes cannot be given
     * back, so a graceful close still hands them to the handler (within the shutdown timeout) instead of releasing
     * them.
     */
    AT_MOST_ONCE,

    /**
     * Like {@link #AT_LEAST_ONCE}, but acknowledgements are enlisted in AMQP local transactions on the
     * subscription's session and committed in batches (by count and by time). Nothing is counted or reported as
     * accepted until the transaction's discharge succeeds; a rollback or a failed commit makes the broker redeliver,
     * and the store absorbs those copies as duplicates because their work was already confirmed.
     */
    TRANSACTIONAL
}
