package org.acemq.amqp.spring.internal;

import java.util.Objects;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.spring.AcemqSender;
import org.springframework.core.MethodParameter;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.invocation.HandlerMethodArgumentResolver;

/**
 * The {@link AcemqSender} of one message: the envelope's {@code send} and {@code reply}, after
 * {@link OutgoingMessages} made an {@code OutgoingMessage} of what the listener gives. Lives for one handler call, as
 * its envelope does (the envelope refuses sends once the call ended).
 */
final class ListenerSender implements AcemqSender {

    private final Envelope envelope;
    private final OutgoingMessages messages;

    ListenerSender(Envelope envelope, OutgoingMessages messages) {
        this.envelope = envelope;
        this.messages = messages;
    }

    @Override
    public String send(String address, Object message) {
        Objects.requireNonNull(address, "address must not be null");
        Objects.requireNonNull(message, "message must not be null");
        return envelope.send(address, messages.toOutgoing(message, null));
    }

    @Override
    public String reply(Object message) {
        Objects.requireNonNull(message, "message must not be null");
        return envelope.reply(messages.toOutgoing(message, null));
    }

    @Override
    public String toString() {
        return "AcemqSender for " + envelope.id();
    }

    /** Resolves {@link AcemqSender} parameters: a sender bound to the message being handled. */
    static final class Resolver implements HandlerMethodArgumentResolver {
        private final OutgoingMessages messages;

        Resolver(OutgoingMessages messages) {
            this.messages = messages;
        }

        @Override
        public boolean supportsParameter(MethodParameter parameter) {
            return parameter.getParameterType() == AcemqSender.class;
        }

        @Override
        public Object resolveArgument(MethodParameter parameter, Message<?> message) {
            if (message instanceof EnvelopeMessage envelope) {
                return new ListenerSender(envelope.envelope(), messages);
            }
            throw new IllegalStateException("not a message the AceMQ consumer received: " + message);
        }
    }
}
