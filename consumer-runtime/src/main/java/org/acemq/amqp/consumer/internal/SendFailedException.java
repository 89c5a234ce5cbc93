package org.acemq.amqp.consumer.internal;

import org.acemq.amqp.api.AcemqException;
import org.acemq.amqp.consumer.SendResult;

/**
 * A message a handler sent could not be sent: the broker refused it (rejected it, or refused a sender for its
 * address), settled it as not delivered, or did not answer in time. To the incoming message it is a failure of its
 * handler: it goes back and its handler runs again, sending the same messages with the same ids.
 */
final class SendFailedException extends AcemqException {

    private static final long serialVersionUID = 1L;
    private final boolean refused;

    /**
     * @param refused whether the broker refused it (trying again is unlikely to help) rather than failed to take it
     */
    SendFailedException(String message, boolean refused, Throwable cause) {
        super(message, cause);
        this.refused = refused;
    }

    /** @return whether the broker refused the message or its address */
    boolean refused() {
        return refused;
    }

    /** @return the result to report: {@link SendResult#REFUSED} or {@link SendResult#FAILED} */
    SendResult result() {
        return refused ? SendResult.REFUSED : SendResult.FAILED;
    }
}
