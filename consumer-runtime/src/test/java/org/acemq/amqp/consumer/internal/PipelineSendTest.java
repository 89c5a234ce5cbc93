package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.types.messaging.AmqpValue;
import org.apache.qpid.protonj2.types.messaging.Data;
import org.junit.jupiter.api.Test;

/**
 * The send stage: what a handler sends goes out after it returned and before its claim is confirmed, with ids derived
 * from the incoming key and the send's position; a handler that throws sends nothing; a send the broker does not take
 * fails the incoming message, whose next run sends the same ids.
 */
class PipelineSendTest {

    private final List<String> ids = new CopyOnWriteArrayList<>();
    private Consumer<Envelope> behaviour = e -> { };

    private Stages stages() {
        return new Stages(Subscription.builder(Deliveries.ADDRESS, e -> behaviour.accept(e)).build());
    }

    private static Delivery admitted(Stages s, Message<?> message) {
        List<Delivery> run = s.pipeline.admit(List.of(s.deliveries.of(message)));
        assertThat(run).hasSize(1);
        return run.get(0);
    }

    private static Delivery admitted(Stages s, String id) {
        return admitted(s, Deliveries.message(id, "body of " + id));
    }

    @Test
    void whatTheHandlerSendsGoesOutAfterItReturnsAndBeforeTheConfirm() throws Exception {
        Stages s = stages();
        behaviour = e -> {
            ids.add(e.send("accepted", OutgoingMessage.of("order " + e.messageId() + " accepted")));
            ids.add(e.send("audit", OutgoingMessage.builder(new byte[] {1, 2, 3}).subject("audit").build()));
            assertThat(s.sent).as("nothing goes out while the handler runs").isEmpty();
        };

        s.pipeline.run(admitted(s, "a"));

        assertThat(s.log).containsExactly("acquire [orders|s:a]", "send [accepted, audit]", "confirm [orders|s:a]",
                "settle [orders|s:a] ACCEPTED/PROCESSED");
        assertThat(s.sent).extracting(Outbound::messageId).containsExactlyElementsOf(ids);
        assertThat(ids).doesNotHaveDuplicates().allMatch(id -> id.startsWith("acemq-"));
        Outbound first = s.sent.get(0);
        assertThat(first.position()).isZero();
        assertThat(first.incomingKey()).isEqualTo("orders|s:a");
        assertThat(first.message().messageId()).isEqualTo(ids.get(0));
        assertThat(first.message().to()).isEqualTo("accepted");
        assertThat(first.message().durable()).as("durable by default").isTrue();
        assertThat(bodySection(s.sent.get(1).message())).isInstanceOf(Data.class);
        assertThat(bodySection(first.message())).isInstanceOf(AmqpValue.class);
    }

    @Test
    void theIdsAreAFunctionOfTheIncomingKeyAndThePositionSoARerunSendsTheSameIds() {
        Stages s = stages();
        int[] runs = {0};
        behaviour = e -> {
            e.send("accepted", OutgoingMessage.of("one"));
            e.send("accepted", OutgoingMessage.of("two"));
            if (runs[0]++ == 0) {
                throw new IllegalStateException("test: fails after sending");
            }
        };

        s.pipeline.run(admitted(s, "a"));
        assertThat(s.sent).as("a handler that throws sends nothing").isEmpty();
        s.advance(Duration.ofSeconds(1));
        s.pipeline.run(admitted(s, "a"));

        assertThat(s.sent).extracting(Outbound::messageId).containsExactly(Outbound.messageId("orders|s:a", 0),
                Outbound.messageId("orders|s:a", 1));
        assertThat(Outbound.messageId("orders|s:a", 0)).isEqualTo(Outbound.messageId("orders|s:a", 0))
                .isNotEqualTo(Outbound.messageId("orders|s:b", 0))
                .isNotEqualTo(Outbound.messageId("orders|s:a", 1));
        String uuid = Outbound.messageId("orders|s:a", 0).substring("acemq-".length());
        assertThat(UUID.fromString(uuid).version()).as("a name-based UUID of version 8").isEqualTo(8);
    }

    @Test
    void aSendTheBrokerDoesNotTakeFailsTheIncomingMessageWhichGoesBackUnconfirmed() {
        Stages s = stages();
        s.sendFailure = new SendFailedException("message x to 'accepted' was released by the broker", false, null);
        behaviour = e -> e.send("accepted", OutgoingMessage.of("x"));

        Delivery d = admitted(s, "a");
        s.pipeline.run(d);

        assertThat(s.log).containsExactly("acquire [orders|s:a]", "release [orders|s:a]");
        assertThat(s.memory.isConfirmed(s.key("a"))).isFalse();
        assertThat(d.state()).as("held for its retry back-off, as a failed handler").isEqualTo(Delivery.State.HELD);
        s.advance(Duration.ofSeconds(1));
        assertThat(s.settlement.summary()).containsExactly("a MODIFIED/FAILED");
    }

    @Test
    void aReplyGoesToReplyToWithTheRequestsCorrelationIdOrElseItsMessageId() throws Exception {
        Stages s = stages();
        behaviour = e -> e.reply(OutgoingMessage.of("answer to " + e.messageId()));

        s.pipeline.run(admitted(s, Deliveries.message("req-1", "q").replyTo("replies-1")));
        s.pipeline.run(admitted(s, Deliveries.message("req-2", "q").replyTo("replies-2").correlationId("conv-7")));
        behaviour = e -> e.reply(OutgoingMessage.builder("a").correlationId(UUID.nameUUIDFromBytes(new byte[1]))
                .build());
        s.pipeline.run(admitted(s, Deliveries.message("req-3", "q").replyTo("replies-3").correlationId("conv-8")));

        assertThat(s.sent).extracting(Outbound::address).containsExactly("replies-1", "replies-2", "replies-3");
        assertThat(s.sent).extracting(o -> correlation(o.message())).containsExactly("req-1", "conv-7",
                UUID.nameUUIDFromBytes(new byte[1]));
    }

    @Test
    void aReplyToAMessageWithoutReplyToFailsTheHandler() {
        Stages s = stages();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        behaviour = e -> {
            try {
                e.reply(OutgoingMessage.of("nobody asked"));
            } catch (RuntimeException x) {
                thrown.set(x);
                throw x;
            }
        };

        s.pipeline.run(admitted(s, "a"));

        assertThat(thrown.get()).isInstanceOf(IllegalStateException.class).hasMessageContaining("no reply-to");
        assertThat(s.sent).isEmpty();
        assertThat(s.log).containsExactly("acquire [orders|s:a]", "release [orders|s:a]");
    }

    @Test
    void anEnvelopeSendsOnlyWhileItsHandlerRuns() {
        Stages s = stages();
        AtomicReference<Envelope> kept = new AtomicReference<>();
        behaviour = kept::set;

        s.pipeline.run(admitted(s, "a"));

        assertThatThrownBy(() -> kept.get().send("late", OutgoingMessage.of("x")))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("only while its handler runs");
        assertThat(s.sent).isEmpty();
    }

    @Test
    void valuesAmqpCannotCarryFailTheSendInTheHandlerWithAClearMessage() {
        Stages s = stages();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        behaviour = e -> {
            try {
                e.send("x", OutgoingMessage.builder(Map.of("when", new Object())).build());
            } catch (IllegalArgumentException x) {
                thrown.set(x);
            }
        };

        s.pipeline.run(admitted(s, "a"));

        assertThat(thrown.get()).hasMessageContaining("java.lang.Object").hasMessageContaining("AMQP cannot carry");
        assertThat(s.settlement.summary()).as("the handler caught it and returned").containsExactly(
                "a ACCEPTED/PROCESSED");
    }

    @Test
    void sendsWrittenToTheOutboxInTheHandlersTransactionAreDispatchedFromThereNotSentAgain() throws Exception {
        Stages s = stages();
        List<List<OutboxEntry>> written = new CopyOnWriteArrayList<>();
        behaviour = e -> {
            e.send("accepted", OutgoingMessage.of("one"));
            EnvelopeImpl capture = (EnvelopeImpl) e;
            written.add(capture.outboxEntries());
            capture.outboxStored();
        };

        Delivery d = admitted(s, "a");
        s.pipeline.run(d);

        assertThat(written).hasSize(1);
        OutboxEntry entry = written.get(0).get(0);
        assertThat(entry.messageId()).isEqualTo(Outbound.messageId("orders|s:a", 0));
        assertThat(Outbound.of(entry).message().messageId()).as("the bytes decode to the same message")
                .isEqualTo(entry.messageId());
        assertThat(s.sent).extracting(Outbound::messageId).containsExactly(entry.messageId());
        assertThat(d.dispatched).containsExactly(entry);
    }

    @Test
    void aClaimTheHandlersTransactionConfirmedIsNotConfirmedAgainButItsMessageIsAccepted() {
        Stages s = stages();
        behaviour = e -> {
            // what a store's transactional handler does: its transaction recorded the confirm and committed
            ((EnvelopeImpl) e).outboxEntries();
            ((EnvelopeImpl) e).outboxStored();
        };

        s.pipeline.run(admitted(s, "a"));

        assertThat(s.log).as("no confirm round trip after the handler's own").containsExactly(
                "acquire [orders|s:a]", "settle [orders|s:a] ACCEPTED/PROCESSED");
    }

    @Test
    void aClaimWhoseHandlerFailedAfterItsTransactionCommittedIsReleasedAsAnyFailure() {
        Stages s = stages();
        behaviour = e -> {
            ((EnvelopeImpl) e).outboxEntries();
            ((EnvelopeImpl) e).outboxStored();
            throw new IllegalStateException("test: failed after the commit");
        };

        s.pipeline.run(admitted(s, "a"));

        assertThat(s.log).as("a failure's claim is released, as for any failing handler")
                .containsExactly("acquire [orders|s:a]", "release [orders|s:a]");
    }

    @Test
    void sendsTheHandlersTransactionDiscardedAreNotSent() {
        Stages s = stages();
        behaviour = e -> {
            e.send("accepted", OutgoingMessage.of("one"));
            ((EnvelopeImpl) e).outboxEntries();
            ((EnvelopeImpl) e).outboxDiscarded();
        };

        s.pipeline.run(admitted(s, "a"));

        assertThat(s.sent).isEmpty();
        assertThat(s.settlement.summary()).containsExactly("a ACCEPTED/PROCESSED");
    }

    private static Object bodySection(Message<?> m) {
        try {
            return ((org.apache.qpid.protonj2.client.AdvancedMessage<?>) m).bodySections().iterator().next();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static Object correlation(Message<?> m) {
        try {
            return m.correlationId();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
