package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.consumer.ConsumerHealth.OutboxHealth;
import org.acemq.amqp.consumer.ConsumerHealth.State;
import org.acemq.amqp.consumer.ConsumerHealth.SubscriptionHealth;
import org.junit.jupiter.api.Test;

/**
 * A consumer whose outbox holds a message older than its maximum age is DOWN, and the details say why (pending,
 * oldest, failing, the broker's last refusal); a consumer whose store keeps no outbox shows none.
 */
class ConsumersHealthTest {

    private static final List<SubscriptionHealth> ATTACHED = List.of(new SubscriptionHealth("orders", "orders", true,
            0, 10, Duration.ZERO));

    @Test
    void anOverdueOutboxIsDownAndItsDetailsNameTheFailure() {
        String refused = "message acemq-1 to 'events' was refused: amqp:not-found";
        ConsumerHealth h = health(new OutboxHealth(2, Duration.ofMinutes(6), 1, Duration.ofMinutes(5), refused));

        assertThat(ConsumersHealth.status(h)).isEqualTo(ConsumersHealth.DOWN);
        assertThat(ConsumersHealth.details(h)).containsEntry("connected", true)
                .extractingByKey("outbox").isEqualTo(Map.of("pending", 2L, "oldestPending", "PT6M", "maxAge", "PT5M",
                        "overdue", true, "failing", 1L, "lastError", refused));
    }

    @Test
    void aYoungOutboxIsUpAndAStoreWithoutOutboxShowsNone() {
        ConsumerHealth young = health(new OutboxHealth(1, Duration.ofSeconds(2), 0, Duration.ofMinutes(5), null));
        assertThat(ConsumersHealth.status(young)).isEqualTo(ConsumersHealth.UP);
        assertThat(ConsumersHealth.details(young)).extractingByKey("outbox").isEqualTo(Map.of("pending", 1L,
                "oldestPending", "PT2S", "maxAge", "PT5M", "overdue", false, "failing", 0L));

        ConsumerHealth none = health(null);
        assertThat(ConsumersHealth.status(none)).isEqualTo(ConsumersHealth.UP);
        assertThat(ConsumersHealth.details(none)).doesNotContainKey("outbox");
    }

    private static ConsumerHealth health(OutboxHealth outbox) {
        return new ConsumerHealth(State.RUNNING, true, true, false, null, ATTACHED, outbox);
    }
}
