package org.acemq.amqp.api;

import java.util.List;

/**
 * Application code that processes messages a batch at a time (for example one bulk insert per call).
 *
 * <p>The runtime calls it with up to the subscription's batch size of messages, or with what arrived within its batch
 * time, each already claimed: duplicates (messages whose work is confirmed) and copies another consumer is working on
 * are filtered out before the call, and a key appears at most once per batch.
 *
 * <ul>
 *   <li>Return normally: every message of the batch is done; each is confirmed, then accepted.</li>
 *   <li>Throw {@link BatchItemsFailedException}: the messages it names failed, each as its cause says (a
 *       {@link PermanentMessageException} rejects that message, anything else is a transient failure retried until the
 *       subscription's maximum attempts); every other message of the batch is done, confirmed and accepted.</li>
 *   <li>Throw anything else: every message of the batch failed with that exception.</li>
 * </ul>
 *
 * <p><b>Threading:</b> called on one of the runtime's worker threads, concurrently for different batches up to the
 * subscription's concurrency. It may block. The envelopes are valid only during the call.
 */
@FunctionalInterface
public interface BatchHandler {

    /**
     * Processes a batch.
     *
     * @param batch the messages, in the order they arrived; never empty, unmodifiable
     * @throws Exception to signal failure, as described in the class documentation
     */
    void handle(List<Envelope> batch) throws Exception;
}
