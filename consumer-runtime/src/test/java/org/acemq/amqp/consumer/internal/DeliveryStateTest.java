package org.acemq.amqp.consumer.internal;

import static org.acemq.amqp.consumer.internal.Delivery.State.ADMITTED;
import static org.acemq.amqp.consumer.internal.Delivery.State.ENDING;
import static org.acemq.amqp.consumer.internal.Delivery.State.HELD;
import static org.acemq.amqp.consumer.internal.Delivery.State.RECEIVED;
import static org.acemq.amqp.consumer.internal.Delivery.State.RUNNING;
import static org.acemq.amqp.consumer.internal.Delivery.State.SETTLED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.acemq.amqp.consumer.internal.Delivery.State;
import org.junit.jupiter.api.Test;

/**
 * The delivery's state machine (docs/runtime.md, "One delivery"): these are its only legal transitions; every other
 * one fails loudly, naming the delivery.
 */
class DeliveryStateTest {

    /** The pipeline's transitions: take &rarr; admit &rarr; run &rarr; end &rarr; hold &rarr; settle. */
    static final Map<State, Set<State>> LEGAL = Map.of(
            RECEIVED, EnumSet.of(ADMITTED, ENDING, HELD, SETTLED), // admitted; or decided at intake (no handler)
            ADMITTED, EnumSet.of(RUNNING, ENDING, HELD, SETTLED), // run; or ended at shutdown without running
            RUNNING, EnumSet.of(ENDING, HELD, SETTLED), // its claim ends; or without a claim settled now or later
            ENDING, EnumSet.of(HELD, SETTLED), // claim ended: settled now or after a delay
            HELD, EnumSet.of(SETTLED, ADMITTED), // the hold ran out: settled, or (ordered retry) run again
            SETTLED, EnumSet.noneOf(State.class)); // final

    private final Deliveries deliveries = new Deliveries();

    /** @return a delivery of key "orders|s:k-1" brought to {@code state} along legal transitions */
    private Delivery in(State state) throws Exception {
        Arrival a = deliveries.of("k-1");
        Delivery d = new Delivery(a.read(a.amqp().message(), "orders|s:k-1", null, null, null, 0));
        List<State> path = switch (state) {
            case RECEIVED -> List.of();
            case ADMITTED -> List.of(ADMITTED);
            case RUNNING -> List.of(ADMITTED, RUNNING);
            case ENDING -> List.of(ADMITTED, RUNNING, ENDING);
            case HELD -> List.of(ADMITTED, RUNNING, ENDING, HELD);
            case SETTLED -> List.of(ADMITTED, RUNNING, ENDING, HELD, SETTLED);
        };
        path.forEach(d::moveTo);
        assertThat(d.state()).isEqualTo(state);
        return d;
    }

    @Test
    void aNewDeliveryIsReceived() throws Exception {
        assertThat(new Delivery(deliveries.of("k-1")).state()).isEqualTo(RECEIVED);
    }

    @Test
    void everyLegalTransitionIsTaken() throws Exception {
        for (State from : State.values()) {
            for (State to : LEGAL.get(from)) {
                Delivery d = in(from);
                d.moveTo(to);
                assertThat(d.state()).as(from + " -> " + to).isEqualTo(to);
                assertThat(to.reachableFrom(from)).as(from + " -> " + to).isTrue();
            }
        }
    }

    @Test
    void everyOtherTransitionThrowsNamingTheDeliveryAndLeavesItWhereItWas() throws Exception {
        int illegal = 0;
        for (State from : State.values()) {
            for (State to : EnumSet.complementOf(EnumSet.copyOf(union(LEGAL.get(from), to(from))))) {
                illegal++;
                Delivery d = in(from);
                assertThatThrownBy(() -> d.moveTo(to)).as(from + " -> " + to)
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("orders|s:k-1")
                        .hasMessageContaining(from.name())
                        .hasMessageContaining(to.name());
                assertThat(d.state()).as("unchanged after " + from + " -> " + to).isEqualTo(from);
                assertThat(to.reachableFrom(from)).as(from + " -> " + to).isFalse();
            }
            Delivery same = in(from);
            assertThatThrownBy(() -> same.moveTo(from)).as(from + " -> itself")
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("orders|s:k-1");
        }
        assertThat(illegal).as("36 pairs less 15 legal and 6 self-transitions").isEqualTo(15);
    }

    @Test
    void theTransitionsTheBriefNamesAreRefused() throws Exception {
        for (State to : State.values()) {
            assertThatThrownBy(() -> in(SETTLED).moveTo(to)).as("SETTLED is final: -> " + to)
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("orders|s:k-1");
            if (to != SETTLED && to != ADMITTED) {
                assertThatThrownBy(() -> in(HELD).moveTo(to)).as("HELD -> " + to)
                        .isInstanceOf(IllegalStateException.class);
            }
        }
        assertThatThrownBy(() -> in(RECEIVED).moveTo(RUNNING)).as("a handler runs admitted deliveries only")
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("orders|s:k-1");
        assertThatThrownBy(() -> in(RUNNING).moveTo(ADMITTED)).as("no way back to the queue")
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> in(HELD).moveTo(ENDING)).as("a held delivery's claim has ended")
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> in(ENDING).moveTo(RUNNING)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> in(ADMITTED).moveTo(RECEIVED)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aDeliveryWithoutAKeyIsNamedNullInTheMessage() {
        Delivery d = new Delivery(deliveries.undecodable());
        d.moveTo(SETTLED);
        assertThatThrownBy(() -> d.moveTo(HELD)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("null").hasMessageContaining("SETTLED");
    }

    private static Set<State> to(State s) {
        return EnumSet.of(s);
    }

    private static Set<State> union(Set<State> a, Set<State> b) {
        Set<State> u = EnumSet.noneOf(State.class);
        u.addAll(a);
        u.addAll(b);
        return u;
    }
}
