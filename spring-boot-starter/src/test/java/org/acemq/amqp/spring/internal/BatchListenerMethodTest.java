package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import jakarta.validation.Valid;
import jakarta.validation.constraints.Positive;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.acemq.amqp.api.BatchItemsFailedException;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.RejectionConditions;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.spring.AcemqSender;
import org.junit.jupiter.api.Test;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.Header;

/**
 * Batch listener methods called directly (no broker): each List parameter resolved per message as a single
 * listener's parameter of its element type, a message whose elements cannot be resolved failing alone and
 * permanently while the others reach the method, the method's {@link BatchItemsFailedException} mapped back to the
 * batch's positions, and what fails the start.
 */
class BatchListenerMethodTest {

    record Reading(String sensor, @Positive(message = "must be greater than 0") int value) {
    }

    static class Batches {
        final List<String> calls = new CopyOnWriteArrayList<>();
        volatile RuntimeException toThrow;

        @AcemqListener(address = "readings", batch = "true")
        void onBatch(@Valid List<Reading> readings, List<Envelope> envelopes, List<Message<Reading>> messages,
                @Header("tenant") List<String> tenants, List<AcemqSender> senders) {
            List<String> call = new ArrayList<>();
            for (int i = 0; i < readings.size(); i++) {
                call.add(readings.get(i).sensor() + "/" + envelopes.get(i).id() + "/"
                        + messages.get(i).getPayload().value() + "/" + tenants.get(i) + "/"
                        + (senders.get(i) != null));
            }
            calls.add(String.join(", ", call));
            if (toThrow != null) {
                throw toThrow;
            }
        }
    }

    static BatchListenerMethod batchMethod(Object bean) {
        ListenerAnnotationProcessor processor = new ListenerAnnotationProcessor();
        processor.postProcessAfterInitialization(bean, "bean");
        return ListenerMethodsTest.withValidator().createBatch(processor.endpoints().get(0));
    }

    static TestEnvelope reading(int n, Object body) {
        return new TestEnvelope("s:r-" + n, 1, body, Map.of("tenant", "t" + n));
    }

    static final String BAD_JSON = "{not json";

    @Test
    void everyListIsParallelAndAMessageThatCannotBeResolvedFailsAloneWhileTheOthersRun() {
        Batches bean = new Batches();
        BatchListenerMethod method = batchMethod(bean);
        bean.toThrow = new BatchItemsFailedException(1, new IllegalStateException("sensor b is offline"));
        List<Envelope> batch = List.of(
                reading(0, "{\"sensor\":\"a\",\"value\":1}"),
                reading(1, BAD_JSON),
                reading(2, "{\"sensor\":\"b\",\"value\":2}"),
                reading(3, "{\"sensor\":\"c\",\"value\":0}"),
                reading(4, "{\"sensor\":\"d\",\"value\":4}"));

        assertThatThrownBy(() -> method.handle(batch)).isInstanceOfSatisfying(BatchItemsFailedException.class, e -> {
            assertThat(e.failures()).containsOnlyKeys(1, 2, 3);
            assertThat(e.failures().get(1)).isInstanceOfSatisfying(PermanentMessageException.class,
                    p -> assertThat(p.condition()).isEqualTo(RejectionConditions.DECODE_ERROR));
            assertThat(e.failures().get(1)).hasMessageStartingWith("the body of s:r-1 cannot be converted to "
                    + Reading.class.getName() + " for Batches.onBatch");
            assertThat(e.failures().get(2)).as("the method's item 1 is the batch's item 2")
                    .isInstanceOf(IllegalStateException.class).hasMessage("sensor b is offline");
            assertThat(e.failures().get(3)).isInstanceOfSatisfying(PermanentMessageException.class,
                    p -> assertThat(p.condition()).isEqualTo(RejectionConditions.VALIDATION_FAILED))
                    .hasMessage("the Reading payload of Batches.onBatch is not valid: value: must be greater than 0");
        });
        assertThat(bean.calls).containsExactly("a/s:r-0/1/t0/true, b/s:r-2/2/t2/true, d/s:r-4/4/t4/true");
    }

    @Test
    void aWholeFailureFailsEveryMessageTheMethodGotAndKeepsTheConversionFailures() throws Exception {
        Batches bean = new Batches();
        BatchListenerMethod method = batchMethod(bean);
        IllegalStateException down = new IllegalStateException("database down");
        bean.toThrow = down;
        assertThatThrownBy(() -> method.handle(List.of(reading(0, "{\"sensor\":\"a\",\"value\":1}"),
                reading(1, BAD_JSON)))).isInstanceOfSatisfying(BatchItemsFailedException.class, e -> {
                    assertThat(e.failures().get(0)).isSameAs(down);
                    assertThat(e.failures().get(1)).isInstanceOf(PermanentMessageException.class);
                });
        assertThatThrownBy(() -> method.handle(List.of(reading(0, "{\"sensor\":\"a\",\"value\":1}"))))
                .as("every message reached the method: its exception as it is").isSameAs(down);

        bean.toThrow = new BatchItemsFailedException(5, new IllegalStateException("no such item"));
        assertThatThrownBy(() -> method.handle(List.of(reading(0, "{\"sensor\":\"a\",\"value\":1}"),
                reading(1, "{\"sensor\":\"b\",\"value\":2}")))).isInstanceOfSatisfying(BatchItemsFailedException.class,
                        e -> {
                            assertThat(e.failures()).containsOnlyKeys(0, 1);
                            assertThat(e.failures().get(0)).hasMessage("Batches.onBatch named item 5 of the 2 it was "
                                    + "given as failed; every one is taken as failed");
                        });

        bean.toThrow = null;
        bean.calls.clear();
        method.handle(List.of(reading(7, "{\"sensor\":\"z\",\"value\":9}")));
        assertThat(bean.calls).containsExactly("z/s:r-7/9/t7/true");
    }

    @Test
    void theMethodIsNotCalledWhenNoMessageOfTheBatchCanBeResolved() {
        Batches bean = new Batches();
        BatchListenerMethod method = batchMethod(bean);
        assertThatThrownBy(() -> method.handle(List.of(reading(0, BAD_JSON), reading(1, "{\"sensor\":\"x\","
                + "\"value\":-1}")))).isInstanceOfSatisfying(BatchItemsFailedException.class,
                        e -> assertThat(e.failures()).containsOnlyKeys(0, 1));
        assertThat(bean.calls).isEmpty();
    }

    @Test
    void theKeyExpressionReadsTheElementPayload() throws Exception {
        BatchListenerMethod method = batchMethod(new Batches());
        assertThat(method.payload(reading(0, "{\"sensor\":\"k\",\"value\":0}")))
                .as("converted to the element type, not validated").isEqualTo(new Reading("k", 0));
    }

    static class ReturnsAValue {
        @AcemqListener(address = "q", batch = "true")
        int onBatch(List<String> bodies) {
            return bodies.size();
        }
    }

    static class NotAList {
        @AcemqListener(address = "q", batch = "true")
        void onBatch(List<String> bodies, Envelope envelope) {
        }
    }

    static class TwoBodies {
        @AcemqListener(address = "q", batch = "true")
        void onBatch(List<String> bodies, List<Reading> readings) {
        }
    }

    @Test
    void aBatchMethodThatReturnsAValueTakesANonListOrTwoBodyListsFailsTheStart() {
        assertThatThrownBy(() -> batchMethod(new ReturnsAValue())).isInstanceOf(IllegalStateException.class)
                .hasMessage("@AcemqListener batch method ReturnsAValue.onBatch returns int, but a batch listener "
                        + "returns void; send through a List<AcemqSender> or List<Envelope> parameter (one per "
                        + "message)");
        assertThatThrownBy(() -> batchMethod(new NotAList())).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("@AcemqListener batch method NotAList.onBatch: parameter 1 "
                        + "(org.acemq.amqp.api.Envelope")
                .hasMessageContaining("is not a List; every parameter of a batch listener is a list");
        assertThatThrownBy(() -> batchMethod(new TwoBodies())).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("@AcemqListener batch method TwoBodies.onBatch takes 2 lists of bodies");
    }
}
