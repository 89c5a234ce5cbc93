package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.consumer.RejectionConditions;
import org.acemq.amqp.consumer.RejectionHandler;
import org.acemq.amqp.spring.AcemqHeaders;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.spring.AcemqSender;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.Sender;
import org.apache.qpid.protonj2.client.Tracker;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.SendTo;
import org.springframework.messaging.support.MessageBuilder;

/**
 * What listener methods send, in a Boot application on the embedded Artemis, read back from the broker: return values
 * to {@code @SendTo}, replies to {@code reply-to} with the correlation-id matched, a {@code Message<?>} return's
 * headers as AMQP fields, the {@link AcemqSender} parameter, a failed attempt that sends nothing, and a return value
 * with nowhere to go (rejected, dead-lettered).
 */
@Timeout(180)
class ListenerSendingIT {

    static EmbeddedArtemis broker;

    @BeforeAll
    static void startBroker() {
        broker = SharedBroker.get();
    }

    record PlaceOrder(String orderId, long cents) {
    }

    record OrderAccepted(String orderId, long cents) {
    }

    record QuoteRequest(String account, String item) {
    }

    record Quote(String item, long cents) {
    }

    record Audit(String what) {
    }

    static class Listeners {
        final AtomicInteger requestCalls = new AtomicInteger();

        @AcemqListener(address = "${test.queue}.commands")
        @SendTo("${test.queue}.events")
        OrderAccepted onCommand(PlaceOrder command) {
            return new OrderAccepted(command.orderId(), command.cents());
        }

        /** Fails the first attempt at a "flaky" item: that attempt must send nothing. */
        @AcemqListener(address = "${test.queue}.requests", maxAttempts = "3", retryBackoffFirst = "0")
        Message<Quote> onRequest(QuoteRequest request, Envelope envelope) {
            requestCalls.incrementAndGet();
            if (request.item().equals("flaky") && envelope.attempt() == 1) {
                throw new IllegalStateException("price service briefly unavailable");
            }
            return MessageBuilder.withPayload(new Quote(request.item(), 1234))
                    .setHeader(AcemqHeaders.SUBJECT, "Quote")
                    .setHeader(AcemqHeaders.GROUP_ID, request.account())
                    .setHeader(AcemqHeaders.DURABLE, false)
                    .setHeader(AcemqHeaders.TIME_TO_LIVE, Duration.ofMinutes(5))
                    .setHeader(AcemqHeaders.PRIORITY, 6)
                    .setHeader("quoteVersion", 2)
                    .build();
        }

        @AcemqListener(address = "${test.queue}.notes")
        void onNote(String note, AcemqSender sender, Envelope envelope) {
            String audit = envelope.address().replace(".notes", ".audit");
            sender.send(audit, new Audit(note));
            sender.send(audit, "plain " + note);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Listeners.class)
    static class SendingApp {
        final List<RejectionHandler.Rejection> rejections = new CopyOnWriteArrayList<>();

        @Bean
        RejectionHandler recordRejections() {
            return rejection -> {
                rejections.add(rejection);
                return RejectionHandler.Decision.REJECT;
            };
        }
    }

    /** Sends protonj2 messages (reply-to, correlation-id: what AmqpTestClient's specs do not set) and waits. */
    static void send(AmqpTestClient client, String address,
            List<org.apache.qpid.protonj2.client.Message<Object>> messages) throws Exception {
        try (Sender sender = client.connection().openSender(address)) {
            List<Tracker> trackers = new ArrayList<>();
            for (org.apache.qpid.protonj2.client.Message<Object> m : messages) {
                trackers.add(sender.send(m));
            }
            for (Tracker t : trackers) {
                t.awaitSettlement(30, TimeUnit.SECONDS);
                assertThat(t.remoteState().isAccepted()).as("the broker accepted the request").isTrue();
            }
        }
    }

    static org.apache.qpid.protonj2.client.Message<Object> request(String messageId, String json, String replyTo,
            Object correlationId) throws Exception {
        org.apache.qpid.protonj2.client.Message<Object> m = org.apache.qpid.protonj2.client.Message.create(
                (Object) json);
        m.messageId(messageId);
        if (replyTo != null) {
            m.replyTo(replyTo);
        }
        if (correlationId != null) {
            m.correlationId(correlationId);
        }
        return m;
    }

    /** A received message's fields. */
    record Received(Object messageId, String body, String contentType, Object correlationId, String subject,
                    String groupId, boolean durable, long timeToLive, byte priority, Map<String, Object> properties) {
    }

    /** Receives and accepts exactly {@code count} messages, keeping every AMQP field. */
    static List<Received> receive(AmqpTestClient client, String address, int count) throws Exception {
        List<Received> out = new ArrayList<>();
        try (Receiver receiver = client.connection().openReceiver(address,
                new ReceiverOptions().autoAccept(false).creditWindow(count + 10))) {
            while (out.size() < count) {
                Delivery d = receiver.receive(30, TimeUnit.SECONDS);
                assertThat(d).as("message " + (out.size() + 1) + " of " + count + " on " + address).isNotNull();
                org.apache.qpid.protonj2.client.Message<Object> m = d.message();
                Map<String, Object> properties = new java.util.LinkedHashMap<>();
                m.forEachProperty(properties::put);
                out.add(new Received(m.messageId(), text(m.body()), m.contentType(), m.correlationId(), m.subject(),
                        m.groupId(), m.durable(), m.timeToLive(), m.priority(), properties));
                d.accept();
            }
        }
        return out;
    }

    static String text(Object body) {
        return body instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : String.valueOf(body);
    }

    @Test
    void returnValuesGoToSendToAndRepliesCarryTheCorrelationIdAndTheMessagesHeaders() throws Exception {
        String queue = "it-sending-" + UUID.randomUUID();
        String replies = queue + ".replies";
        try (ConfigurableApplicationContext app = AcemqListenerIT.start(SendingApp.class, "test.queue=" + queue);
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            client.send(queue + ".commands", AmqpTestClient.message("cmd-1", "{\"orderId\":\"o-1\",\"cents\":100}"),
                    AmqpTestClient.message("cmd-2", "{\"orderId\":\"o-2\",\"cents\":200}"));
            send(client, queue + ".requests", List.of(
                    request("req-1", "{\"account\":\"acc-1\",\"item\":\"apple\"}", replies, "corr-1"),
                    request("req-2", "{\"account\":\"acc-2\",\"item\":\"pear\"}", replies, null),
                    request("req-3", "{\"account\":\"acc-3\",\"item\":\"flaky\"}", replies, null)));

            List<Received> events = receive(client, queue + ".events", 2);
            assertThat(events).extracting(Received::body).containsExactlyInAnyOrder(
                    "{\"orderId\":\"o-1\",\"cents\":100}", "{\"orderId\":\"o-2\",\"cents\":200}");
            for (Received e : events) {
                assertThat(e.contentType()).isEqualTo("application/json");
                assertThat(e.durable()).isTrue();
                assertThat(e.correlationId()).as("sent to @SendTo, not a reply").isNull();
                assertThat(String.valueOf(e.messageId())).as("the runtime's stable id").startsWith("acemq-");
            }

            List<Received> answers = receive(client, replies, 3);
            Map<Object, Received> byCorrelation = new java.util.HashMap<>();
            for (Received a : answers) {
                byCorrelation.put(a.correlationId(), a);
            }
            assertThat(byCorrelation).as("the request's correlation-id, else its message-id")
                    .containsOnlyKeys("corr-1", "req-2", "req-3");
            Received quote = byCorrelation.get("corr-1");
            assertThat(quote.body()).isEqualTo("{\"item\":\"apple\",\"cents\":1234}");
            assertThat(quote.contentType()).isEqualTo("application/json");
            assertThat(quote.subject()).isEqualTo("Quote");
            assertThat(quote.groupId()).isEqualTo("acc-1");
            assertThat(quote.durable()).isFalse();
            assertThat(quote.timeToLive()).isEqualTo(Duration.ofMinutes(5).toMillis());
            assertThat(quote.priority()).isEqualTo((byte) 6);
            assertThat(quote.properties()).containsEntry("quoteVersion", 2)
                    .doesNotContainKey(AcemqHeaders.IDEMPOTENCY_KEY);
            assertThat(new HashSet<>(answers.stream().map(Received::messageId).toList())).hasSize(3);

            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                assertThat(AcemqListenerIT.count(registry, queue + ".requests", "accepted", "processed"))
                        .isEqualTo(3);
                assertThat(AcemqListenerIT.count(registry, queue + ".commands", "accepted", "processed"))
                        .isEqualTo(2);
            });
            assertThat(app.getBean(Listeners.class).requestCalls).as("the flaky request ran twice").hasValue(4);
            assertThat(client.drain(replies)).as("its failed attempt sent nothing").isEmpty();
        }
    }

    @Test
    void aSenderParameterSendsConvertedMessages() throws Exception {
        String queue = "it-sender-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = AcemqListenerIT.start(SendingApp.class, "test.queue=" + queue);
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            client.send(queue + ".notes", AmqpTestClient.message("n-1", "checked"));
            List<Received> audit = receive(client, queue + ".audit", 2);
            assertThat(audit).extracting(Received::body)
                    .containsExactly("{\"what\":\"checked\"}", "plain checked");
            assertThat(audit.get(0).contentType()).isEqualTo("application/json");
            assertThat(audit.get(1).contentType()).as("a String is sent as it is").isNull();
            assertThat(audit.get(0).messageId()).isNotEqualTo(audit.get(1).messageId());
        }
    }

    @Test
    void aReturnValueWithNowhereToGoIsRejectedAndDeadLetteredAndNothingIsSent() throws Exception {
        String queue = "it-no-reply-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = AcemqListenerIT.start(SendingApp.class, "test.queue=" + queue);
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            SendingApp sending = app.getBean(SendingApp.class);
            send(client, queue + ".requests", List.of(
                    request("lost-1", "{\"account\":\"acc-9\",\"item\":\"plum\"}", null, "corr-9")));

            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                assertThat(AcemqListenerIT.count(registry, queue + ".requests", "rejected", "permanent"))
                        .isEqualTo(1);
                assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(queue + ".requests")))
                        .isEqualTo(1);
            });
            assertThat(sending.rejections).singleElement().satisfies(r -> {
                assertThat(r.condition()).isEqualTo(RejectionConditions.NO_REPLY_ADDRESS);
                assertThat(r.description().orElseThrow()).contains("Listeners.onRequest returned a value (GenericMessage) for "
                        + r.envelope().orElseThrow().id() + ", but the message has no reply-to address and the "
                        + "method no @SendTo");
            });
            assertThat(AcemqListenerIT.count(registry, queue + ".requests", "modified", "failed"))
                    .as("never retried").isZero();
        }
    }
}
