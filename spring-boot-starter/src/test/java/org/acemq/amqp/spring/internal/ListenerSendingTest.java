package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.RejectionConditions;
import org.acemq.amqp.spring.AcemqHeaders;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.spring.AcemqSender;
import org.junit.jupiter.api.Test;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.handler.annotation.SendTo;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.util.MimeTypeUtils;

/**
 * What a listener method sends, called directly (no broker) on an envelope that records the sends: return values to
 * {@code @SendTo} or as replies, their conversion, a {@code Message<?>}'s headers mapped to AMQP fields, the
 * {@link AcemqSender} parameter, a return value with nowhere to go, and what fails the start.
 */
class ListenerSendingTest {

    record Accepted(String orderId, long cents) {
    }

    /** An envelope that records what is sent, replying as the runtime does (its correlation-id rule). */
    static final class RecordingEnvelope implements Envelope {
        final TestEnvelope base;
        final String replyTo;
        final Object correlationId;
        final List<String> addresses = new ArrayList<>();
        final List<OutgoingMessage> messages = new ArrayList<>();

        RecordingEnvelope(Object body, String replyTo, Object correlationId) {
            this.base = new TestEnvelope("s:m-1", 1, body, Map.of());
            this.replyTo = replyTo;
            this.correlationId = correlationId;
        }

        @Override
        public String send(String address, OutgoingMessage message) {
            addresses.add(address);
            messages.add(message);
            return "sent-" + messages.size();
        }

        @Override
        public String reply(OutgoingMessage message) {
            if (replyTo == null) {
                throw new IllegalStateException("message " + id() + " has no reply-to address to answer");
            }
            Object correlation = message.correlationId() != null ? message.correlationId()
                    : correlationId != null ? correlationId : messageId();
            return send(replyTo, message.toBuilder().correlationId(correlation).build());
        }

        @Override
        public String id() {
            return base.id();
        }

        @Override
        public Object messageId() {
            return base.messageId();
        }

        @Override
        public String address() {
            return base.address();
        }

        @Override
        public Object body() {
            return base.body();
        }

        @Override
        public <T> T body(Class<T> type) {
            return base.body(type);
        }

        @Override
        public Object correlationId() {
            return correlationId;
        }

        @Override
        public String subject() {
            return null;
        }

        @Override
        public String contentType() {
            return null;
        }

        @Override
        public String replyTo() {
            return replyTo;
        }

        @Override
        public Instant creationTime() {
            return null;
        }

        @Override
        public Map<String, Object> applicationProperties() {
            return Map.of("tenant", "acme");
        }

        @Override
        public Map<String, Object> annotations() {
            return Map.of();
        }

        @Override
        public long deliveryCount() {
            return 0;
        }

        @Override
        public boolean firstAcquirer() {
            return true;
        }

        @Override
        public int attempt() {
            return 1;
        }
    }

    static class Replies {
        @AcemqListener(address = "to-events")
        @SendTo("events")
        String toEvents(String body) {
            return "done " + body;
        }

        @AcemqListener(address = "record-reply")
        Accepted recordReply(String body) {
            return new Accepted(body, 250);
        }

        @AcemqListener(address = "empty-send-to")
        @SendTo
        Optional<String> emptySendTo(String body) {
            return body.isEmpty() ? Optional.empty() : Optional.of("re: " + body);
        }

        @AcemqListener(address = "nothing")
        String nothing(String body) {
            return null;
        }

        @AcemqListener(address = "spring-message")
        Message<Accepted> springMessage(String body, Message<?> in) {
            return MessageBuilder.withPayload(new Accepted(body, 5))
                    .copyHeaders(in.getHeaders())   // the incoming message's fields must not travel on
                    .setHeader(AcemqHeaders.SUBJECT, "OrderAccepted")
                    .setHeader(AcemqHeaders.CORRELATION_ID, "corr-7")
                    .setHeader(AcemqHeaders.REPLY_TO, "answers")
                    .setHeader(AcemqHeaders.GROUP_ID, "account-1")
                    .setHeader(AcemqHeaders.DURABLE, false)
                    .setHeader(AcemqHeaders.TIME_TO_LIVE, Duration.ofSeconds(30))
                    .setHeader(AcemqHeaders.PRIORITY, 7)
                    .setHeader(AcemqHeaders.MESSAGE_ANNOTATIONS, Map.of("x-app-origin", "orders"))
                    .setHeader("orderId", body)
                    .build();
        }

        @AcemqListener(address = "text-message")
        Message<String> textMessage(String body) {
            return MessageBuilder.withPayload("plain " + body)
                    .setHeader(MessageHeaders.CONTENT_TYPE, MimeTypeUtils.TEXT_PLAIN)
                    .build();
        }

        @AcemqListener(address = "bad-header")
        Message<String> badHeader(String body) {
            return MessageBuilder.withPayload(body).setHeader(AcemqHeaders.PRIORITY, "high").build();
        }

        @AcemqListener(address = "outgoing")
        OutgoingMessage outgoing(String body) {
            return OutgoingMessage.builder(body.getBytes(StandardCharsets.UTF_8)).subject("raw").build();
        }

        @AcemqListener(address = "sender")
        void sender(String body, AcemqSender sender) {
            sender.send("audit", new Accepted(body, 1));
            sender.send("audit", MessageBuilder.withPayload("text").setHeader("kind", "note").build());
            sender.reply(OutgoingMessage.of("ok"));
        }
    }

    @SendTo("class-level")
    static class ClassLevel {
        @AcemqListener(address = "class-level-send-to")
        String inherit(String body) {
            return body.toUpperCase();
        }

        @AcemqListener(address = "method-wins")
        @SendTo("method-level")
        String methodWins(String body) {
            return body;
        }
    }

    static Map<String, ListenerMethod> methods(Object bean) {
        return ListenerMethodsTest.methods(ListenerMethodsTest.withValidator(), bean);
    }

    @Test
    void aReturnValueGoesToSendToAsItIsOrAsAReplyConvertedToJsonWithTheCorrelationIdSet() throws Exception {
        Map<String, ListenerMethod> m = methods(new Replies());
        RecordingEnvelope toEvents = new RecordingEnvelope("a", "replies", "c-1");
        m.get("to-events").handle(toEvents);
        assertThat(toEvents.addresses).as("@SendTo wins over the message's reply-to").containsExactly("events");
        assertThat(toEvents.messages.get(0).body()).isEqualTo("done a");
        assertThat(toEvents.messages.get(0).correlationId()).as("not a reply: no correlation-id").isNull();

        RecordingEnvelope reply = new RecordingEnvelope("o-1", "replies", null);
        m.get("record-reply").handle(reply);
        assertThat(reply.addresses).containsExactly("replies");
        OutgoingMessage answer = reply.messages.get(0);
        assertThat(new String((byte[]) answer.body(), StandardCharsets.UTF_8))
                .isEqualTo("{\"orderId\":\"o-1\",\"cents\":250}");
        assertThat(answer.contentType()).isEqualTo("application/json");
        assertThat(answer.correlationId()).as("the request's message-id").isEqualTo("m-1");
        assertThat(answer.durable()).isTrue();

        RecordingEnvelope correlated = new RecordingEnvelope("o-2", "replies", "c-9");
        m.get("record-reply").handle(correlated);
        assertThat(correlated.messages.get(0).correlationId()).as("the request's correlation-id").isEqualTo("c-9");
    }

    @Test
    void nullAndEmptyOptionalSendNothingAndAnEmptySendToReplies() throws Exception {
        Map<String, ListenerMethod> m = methods(new Replies());
        RecordingEnvelope nothing = new RecordingEnvelope("x", null, null);
        m.get("nothing").handle(nothing);
        RecordingEnvelope empty = new RecordingEnvelope("", "replies", null);
        m.get("empty-send-to").handle(empty);
        assertThat(nothing.messages).isEmpty();
        assertThat(empty.messages).isEmpty();

        RecordingEnvelope present = new RecordingEnvelope("hi", "replies", null);
        m.get("empty-send-to").handle(present);
        assertThat(present.addresses).containsExactly("replies");
        assertThat(present.messages.get(0).body()).isEqualTo("re: hi");
    }

    @Test
    void aReturnValueWithNowhereToGoFailsTheMessagePermanently() {
        Map<String, ListenerMethod> m = methods(new Replies());
        RecordingEnvelope noReplyTo = new RecordingEnvelope("o-3", null, null);
        assertThatThrownBy(() -> m.get("record-reply").handle(noReplyTo))
                .isInstanceOfSatisfying(PermanentMessageException.class,
                        e -> assertThat(e.condition()).isEqualTo(RejectionConditions.NO_REPLY_ADDRESS))
                .hasMessage("Replies.recordReply returned a value (Accepted) for s:m-1, but the message has no reply-to "
                        + "address and the method no @SendTo");
        assertThat(noReplyTo.messages).isEmpty();
    }

    @Test
    void aSpringMessagesHeadersBecomeAmqpFieldsAndApplicationPropertiesAndTheIncomingFieldsStayBehind()
            throws Exception {
        Map<String, ListenerMethod> m = methods(new Replies());
        RecordingEnvelope in = new RecordingEnvelope("o-4", "replies", null);
        m.get("spring-message").handle(in);
        OutgoingMessage out = in.messages.get(0);
        assertThat(new String((byte[]) out.body(), StandardCharsets.UTF_8))
                .isEqualTo("{\"orderId\":\"o-4\",\"cents\":5}");
        assertThat(out.contentType()).isEqualTo("application/json");
        assertThat(out.subject()).isEqualTo("OrderAccepted");
        assertThat(out.correlationId()).as("the message's own wins over the request's").isEqualTo("corr-7");
        assertThat(out.replyTo()).isEqualTo("answers");
        assertThat(out.groupId()).isEqualTo("account-1");
        assertThat(out.durable()).isFalse();
        assertThat(out.timeToLive()).isEqualTo(Duration.ofSeconds(30));
        assertThat(out.priority()).isEqualTo(7);
        assertThat(out.annotations()).isEqualTo(Map.of("x-app-origin", "orders"));
        assertThat(out.applicationProperties()).as("the incoming message's application property came along with "
                + "its headers; its AMQP fields and Spring's id and timestamp did not")
                .isEqualTo(Map.of("tenant", "acme", "orderId", "o-4"));

        RecordingEnvelope text = new RecordingEnvelope("t", "replies", null);
        m.get("text-message").handle(text);
        assertThat(text.messages.get(0).body()).isEqualTo("plain t");
        assertThat(text.messages.get(0).contentType()).isEqualTo("text/plain");
    }

    @Test
    void aReturnValueThatCannotBeSentFailsPermanentlyNamingTheMethodAndTheProblem() {
        Map<String, ListenerMethod> m = methods(new Replies());
        assertThatThrownBy(() -> m.get("bad-header").handle(new RecordingEnvelope("b", "replies", null)))
                .isInstanceOfSatisfying(PermanentMessageException.class,
                        e -> assertThat(e.condition()).isEqualTo(RejectionConditions.PERMANENT_FAILURE))
                .hasMessage("the value (GenericMessage) Replies.badHeader returned for s:m-1 cannot be sent as a reply: header "
                        + "amqp_priority must be a number from 0 to 255, but was 'high'");
    }

    @Test
    void anOutgoingMessageIsSentAsItIsAndTheSenderConvertsAsReturnValuesAre() throws Exception {
        Map<String, ListenerMethod> m = methods(new Replies());
        RecordingEnvelope raw = new RecordingEnvelope("r", "replies", null);
        m.get("outgoing").handle(raw);
        assertThat(raw.messages.get(0).subject()).isEqualTo("raw");
        assertThat((byte[]) raw.messages.get(0).body()).isEqualTo("r".getBytes(StandardCharsets.UTF_8));

        RecordingEnvelope sender = new RecordingEnvelope("s", "replies", "c-2");
        m.get("sender").handle(sender);
        assertThat(sender.addresses).containsExactly("audit", "audit", "replies");
        assertThat(new String((byte[]) sender.messages.get(0).body(), StandardCharsets.UTF_8))
                .isEqualTo("{\"orderId\":\"s\",\"cents\":1}");
        assertThat(sender.messages.get(1).body()).isEqualTo("text");
        assertThat(sender.messages.get(1).applicationProperties()).isEqualTo(Map.of("kind", "note"));
        assertThat(sender.messages.get(2).correlationId()).isEqualTo("c-2");
    }

    @Test
    void sendToOnTheClassAppliesToItsMethodsUnlessAMethodHasItsOwn() throws Exception {
        Map<String, ListenerMethod> m = methods(new ClassLevel());
        RecordingEnvelope inherit = new RecordingEnvelope("abc", null, null);
        m.get("class-level-send-to").handle(inherit);
        RecordingEnvelope own = new RecordingEnvelope("abc", null, null);
        m.get("method-wins").handle(own);
        assertThat(inherit.addresses).containsExactly("class-level");
        assertThat(inherit.messages.get(0).body()).isEqualTo("ABC");
        assertThat(own.addresses).containsExactly("method-level");
    }

    // ------------------------------------------------------------------ what fails the start

    static class TwoAddresses {
        @AcemqListener(address = "q")
        @SendTo({"a", "b"})
        String twoAddresses(String body) {
            return body;
        }
    }

    static class SendToOnVoid {
        @AcemqListener(address = "q")
        @SendTo("a")
        void sendToOnVoid(String body) {
        }
    }

    static class BatchParameterOnASingleListener {
        @AcemqListener(address = "q")
        void envelopes(List<Envelope> envelopes) {
        }
    }

    @Test
    void sendToWithSeveralAddressesOrOnAVoidMethodAndABatchParameterWithoutBatchFailTheStart() {
        assertThatThrownBy(() -> methods(new TwoAddresses()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("@AcemqListener method TwoAddresses.twoAddresses has @SendTo with 2 addresses [a, b]; a "
                        + "return value goes to one address (send to others with an AcemqSender parameter)");
        assertThatThrownBy(() -> methods(new SendToOnVoid()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("@AcemqListener method SendToOnVoid.sendToOnVoid has @SendTo but returns void, so it "
                        + "sends nothing; return the message to send, or remove @SendTo");
        assertThatThrownBy(() -> methods(new BatchParameterOnASingleListener()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is a batch listener's parameter; set batch = \"true\"");
    }
}
