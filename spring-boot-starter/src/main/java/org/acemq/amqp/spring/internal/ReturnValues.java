package org.acemq.amqp.spring.internal;

import java.util.Optional;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.RejectionConditions;
import org.springframework.core.MethodParameter;
import org.springframework.messaging.converter.MessageConversionException;

/**
 * Sends what a listener method returned: to its {@code @SendTo} address, or else as a reply to the message's
 * reply-to (the envelope's {@code reply}, which sets the correlation-id). Null and an empty {@code Optional} send
 * nothing.
 *
 * <p>Failures here repeat on every run of the message (the method returns the same thing), so they are permanent:
 * a value with nowhere to go (no {@code @SendTo}, no reply-to) is rejected with
 * {@link RejectionConditions#NO_REPLY_ADDRESS}; a value that cannot be converted or encoded with
 * {@link RejectionConditions#PERMANENT_FAILURE}, naming the method and the problem.
 */
final class ReturnValues {

    private final OutgoingMessages messages;
    private final String sendTo;
    private final MethodParameter returnType;
    private final String description;

    /**
     * @param messages makes messages of return values
     * @param sendTo the {@code @SendTo} address, or null to reply
     * @param returnType the method's return type, a hint for the converters
     * @param description the listener method, for messages
     */
    ReturnValues(OutgoingMessages messages, String sendTo, MethodParameter returnType, String description) {
        this.messages = messages;
        this.sendTo = sendTo;
        this.returnType = returnType;
        this.description = description;
    }

    /**
     * @param result what the method returned
     * @param envelope the message it handled
     * @throws PermanentMessageException if the value has nowhere to go, or cannot be made a message
     */
    void send(Object result, Envelope envelope) throws PermanentMessageException {
        Object value = result instanceof Optional<?> optional ? optional.orElse(null) : result;
        if (value == null) {
            return;
        }
        String replyTo = envelope.replyTo();
        if (sendTo == null && (replyTo == null || replyTo.isEmpty())) {
            throw new PermanentMessageException(RejectionConditions.NO_REPLY_ADDRESS, description
                    + " returned a value (" + value.getClass().getSimpleName() + ") for " + envelope.id()
                    + ", but the message has no reply-to address and the method no @SendTo", null);
        }
        try {
            OutgoingMessage message = messages.toOutgoing(value, returnType);
            if (sendTo != null) {
                envelope.send(sendTo, message);
            } else {
                envelope.reply(message);
            }
        } catch (IllegalArgumentException | MessageConversionException e) {
            throw new PermanentMessageException(RejectionConditions.PERMANENT_FAILURE, "the value ("
                    + value.getClass().getSimpleName() + ") " + description + " returned for " + envelope.id()
                    + " cannot be sent" + (sendTo != null ? " to " + sendTo : " as a reply") + ": " + e.getMessage(),
                    e);
        }
    }

    @Override
    public String toString() {
        return sendTo != null ? "send to " + sendTo : "reply";
    }
}
