package org.acemq.amqp.api;

/**
 * Remembers which messages have already been handled, so that handling one twice does not happen twice.
 *
 * <p>Brokers deliver at least once. A message comes back whenever a consumer dies between doing the work and
 * acknowledging it, whenever a connection drops while a delivery is unsettled, and whenever a publisher retries a
 * send that had in fact succeeded. Duplicates are therefore normal traffic, and this store is how a consumer
 * absorbs them.
 *
 * <h2>The three steps</h2>
 * A consumer {@linkplain #claim claims} an identifier before doing the work, {@linkplain #confirm confirms} it
 * after the work succeeded, and {@linkplain #release releases} it when the work failed. The split is what makes
 * the store safe under failure:
 * <ul>
 *   <li>Recording "done" <em>before</em> the work would turn a crash in the middle of the work into a message that
 *       looks handled and is never handled.</li>
 *   <li>Recording "done" only <em>after</em> the work, with no claim first, lets two concurrent copies of the same
 *       message both do the work.</li>
 * </ul>
 * A claim held while the work runs excludes the second copy; confirming only on success and releasing on failure
 * excludes the first problem.
 *
 * <h2>Guarantees every implementation gives</h2>
 * <ul>
 *   <li><b>Atomic claim.</b> {@link #claim} and {@link #tryClaim} are atomic: of any number of concurrent callers,
 *       at most one obtains a given identifier, and it keeps it until it confirms, releases, or its lease
 *       expires.</li>
 *   <li><b>Leases.</b> A claim is a lease of a configured length. A claim whose lease expired can be taken over
 *       by a new {@code claim} (its first owner is presumed dead). Each store instance has an owner identity;
 *       {@link #release} from an owner whose lease was taken over does nothing, so it cannot destroy the new
 *       owner's claim. {@link #confirm} from such an owner still records completion, because the work did
 *       complete and forgetting that would guarantee a second effect; the new owner's later {@code confirm} is
 *       then idempotent and its {@code release} does nothing.</li>
 *   <li><b>Retention.</b> A confirmed identifier is remembered for a configured retention period and then
 *       forgotten. The retention must outlive the longest time a duplicate can still arrive (broker redelivery
 *       window, queue backlog, publisher retry window).</li>
 *   <li><b>Bad input fails fast.</b> A {@code null} identifier throws {@link NullPointerException}; an empty or
 *       blank one, one longer than {@link MessageIds#MAX_LENGTH} characters, or one holding a NUL character or an
 *       unpaired surrogate, throws {@link InvalidMessageIdException} (an {@link IllegalArgumentException}); so does
 *       an identifier the backing storage cannot hold. Nothing is written in either case, and the store goes on
 *       working for other identifiers: a refused identifier is never reported as an outage.</li>
 *   <li><b>Unreachable backing storage</b> throws {@link StoreUnavailableException} with the cause attached, and
 *       leaves nothing half-written.</li>
 * </ul>
 *
 * <h2>How a consumer uses it</h2>
 * Consumers call {@link #tryClaim} rather than {@link #claim}: only {@link ClaimResult#ALREADY_CONFIRMED} is a
 * duplicate to acknowledge; {@link ClaimResult#IN_PROGRESS} is unfinished work that must go back to the broker
 * to be tried again.
 *
 * <p><b>Threading:</b> implementations are safe for concurrent use by any number of threads. Methods may block
 * on I/O (a database round trip); call them from worker threads, never from a network event loop.
 *
 * @see LeasedIdempotencyStore for the lease, fencing and attempt-count extension the runtime uses
 */
public interface IdempotencyStore {

    /**
     * Takes ownership of a message identifier, if nobody else has it.
     *
     * @param messageId the identifier, normally {@link Envelope#id()}
     * @return {@code true} when the caller now owns the identifier and should do the work; {@code false} when it
     *     is already confirmed or claimed by someone else. Which of the two matters (only a confirmed identifier
     *     is a duplicate), so consumers call {@link #tryClaim} instead.
     * @throws NullPointerException if {@code messageId} is null
     * @throws IllegalArgumentException if {@code messageId} is blank or too long
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    boolean claim(String messageId);

    /**
     * Records that the work for a claimed identifier completed.
     *
     * <p>From then on {@link #claim} answers {@code false} for the identifier, and {@link #tryClaim} answers
     * {@link ClaimResult#ALREADY_CONFIRMED}, until the store forgets it at the end of the retention period. That is
     * what stops a redelivery from repeating the work. Confirming an identifier that is not claimed (its claim
     * expired and was forgotten, or was taken over) still records completion. Whether confirming an already
     * confirmed identifier again restarts its retention is left to the implementation.
     *
     * @param messageId the identifier being confirmed
     * @throws StoreUnavailableException if the backing storage cannot be reached; completion is then not recorded
     */
    void confirm(String messageId);

    /**
     * Gives up a claim without recording completion, so that the message can be tried again.
     *
     * <p>Called when the work failed. Without it a failed attempt would leave the identifier claimed until the
     * lease runs out, and every redelivery until then would be turned away as in progress. Releasing an
     * identifier this store instance does not hold (never claimed, already confirmed, or taken over by another
     * owner after the lease expired) does nothing.
     *
     * @param messageId the identifier being released
     * @throws StoreUnavailableException if the backing storage cannot be reached; the claim then simply lapses
     *     when its lease expires
     */
    void release(String messageId);

    /**
     * Tells whether the work for an identifier is known to have completed.
     *
     * @param messageId the identifier to test
     * @return {@code true} if the identifier is confirmed and not yet forgotten
     */
    boolean isConfirmed(String messageId);

    /**
     * Takes ownership of a message identifier, and says why not when it cannot.
     *
     * <p>{@link #claim} answers {@code false} in two situations that a consumer must not treat alike. A confirmed
     * identifier is finished work, and a redelivery of it is a duplicate to acknowledge. A claimed but
     * unconfirmed identifier is work nobody has finished yet: acknowledging that copy loses the message whenever
     * the first owner dies and its release fails too. So a consumer acknowledges only
     * {@link ClaimResult#ALREADY_CONFIRMED} and returns {@link ClaimResult#IN_PROGRESS} copies to the broker.
     *
     * <p>This default asks {@link #claim} and then {@link #isConfirmed}, which suits any store written against the
     * two-state contract. The two calls are not one atomic step, and both races are safe: a confirmation landing
     * between them reads as a duplicate, which it is; a confirmation expiring between them reads as in progress,
     * which only costs a retry. The stores shipped with AceMQ override it with a single atomic operation.
     *
     * @param messageId the identifier, normally {@link Envelope#id()}
     * @return whether the caller now owns the identifier, or why it does not
     */
    default ClaimResult tryClaim(String messageId) {
        if (claim(messageId)) {
            return ClaimResult.CLAIMED;
        }
        return isConfirmed(messageId) ? ClaimResult.ALREADY_CONFIRMED : ClaimResult.IN_PROGRESS;
    }

    /** What {@link #tryClaim} found. */
    enum ClaimResult {
        /** The caller now owns the identifier and should do the work, then confirm or release. */
        CLAIMED,
        /** The work is already done: the delivery is a duplicate and may be acknowledged without doing it again. */
        ALREADY_CONFIRMED,
        /**
         * Someone else holds a live claim and has not finished. The delivery must not be acknowledged; it goes back
         * to the broker to be tried again later.
         */
        IN_PROGRESS
    }
}
