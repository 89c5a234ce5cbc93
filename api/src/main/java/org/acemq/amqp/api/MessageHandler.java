package org.acemq.amqp.api;

/**
 * Application code that processes one message.
 *
 * <p>The runtime calls it only after it has claimed the message's {@linkplain Envelope#id() identifier}, so two
 * copies of one message never run it at the same time, and a copy whose work was already confirmed never runs it
 * again (within the store's retention).
 *
 * <ul>
 *   <li>Return normally: the work is done. The runtime confirms the identifier, then accepts the delivery.</li>
 *   <li>Throw {@link PermanentMessageException}: the message can never succeed; it is rejected (dead-lettered).</li>
 *   <li>Throw anything else: a transient failure. The claim is released and the delivery returned to the broker to
 *       be tried again, until the configured maximum number of attempts, after which it is rejected.</li>
 * </ul>
 *
 * <p><b>Threading:</b> called on one of the runtime's worker threads, never on a network I/O thread, and
 * concurrently for different messages up to the configured concurrency. It may block. It should be idempotent
 * in its own effects where it can be: the store prevents a repeat while it remembers the message, but a handler
 * that dies after its side effect and before the confirm will see the message again.
 */
@FunctionalInterface
public interface MessageHandler {

    /**
     * Processes one message.
     *
     * @param envelope the message and its delivery metadata; valid only during this call
     * @throws Exception to signal failure, as described in the class documentation
     */
    void handle(Envelope envelope) throws Exception;
}
