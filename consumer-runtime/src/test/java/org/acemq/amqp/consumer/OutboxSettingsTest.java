package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import org.acemq.amqp.consumer.ConsumerHealth.OutboxHealth;
import org.acemq.amqp.consumer.ConsumerHealth.State;
import org.acemq.amqp.consumer.ConsumerHealth.SubscriptionHealth;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.junit.jupiter.api.Test;

/**
 * The outbox settings of the consumer's builder are validated as they arrive and against each other, with messages
 * naming the setting, the rule and the value; health turns unhealthy only when the oldest pending message is older
 * than the maximum age.
 */
class OutboxSettingsTest {

    private static final List<SubscriptionHealth> ATTACHED = List.of(new SubscriptionHealth("orders", "orders", true,
            0, 10, Duration.ZERO));

    @Test
    void theDefaultsAreNamedAndLeaveTheSweepTimeToRepairACrashBeforeHealthTurns() {
        assertThat(AmqpConsumer.DEFAULT_OUTBOX_SWEEP_INTERVAL).isEqualTo(Duration.ofSeconds(10));
        assertThat(AmqpConsumer.DEFAULT_OUTBOX_SWEEP_MIN_AGE).isEqualTo(Duration.ofMinutes(1));
        assertThat(AmqpConsumer.DEFAULT_OUTBOX_MAX_AGE).isEqualTo(Duration.ofMinutes(5));
        assertThat(AmqpConsumer.DEFAULT_OUTBOX_MAX_AGE).isGreaterThan(AmqpConsumer.DEFAULT_OUTBOX_SWEEP_MIN_AGE
                .plus(AmqpConsumer.DEFAULT_OUTBOX_SWEEP_INTERVAL));
        assertThat(AmqpConsumer.DEFAULT_OUTBOX_SWEEP_MIN_AGE)
                .isGreaterThan(ConnectionSettings.DEFAULT_REQUEST_TIMEOUT);
    }

    @Test
    void eachSettingIsValidatedAsItArrives() {
        AmqpConsumer.Builder b = AmqpConsumer.builder();
        assertThatThrownBy(() -> b.outboxSweepInterval(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("outboxSweepInterval must be > 0, but was PT0S");
        assertThatThrownBy(() -> b.outboxSweepMinAge(Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("outboxSweepMinAge must be >= 0, but was PT-1S");
        assertThatThrownBy(() -> b.outboxMaxAge(Duration.ofMillis(-5))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("outboxMaxAge must be > 0");
        assertThatThrownBy(() -> b.outboxMaxAge(null)).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("outboxMaxAge");
        b.outboxSweepMinAge(Duration.ZERO); // takes every waiting message
    }

    @Test
    void theMaximumAgeMustLeaveTheSweepTimeToTakeWhatACrashLeft() {
        AmqpConsumer.Builder b = AmqpConsumer.builder().broker("localhost", 5672)
                .store(InMemoryIdempotencyStore.ofDefaults()).subscribe("orders", e -> { })
                .outboxSweepInterval(Duration.ofSeconds(10)).outboxSweepMinAge(Duration.ofSeconds(50))
                .outboxMaxAge(Duration.ofMinutes(1));
        assertThatThrownBy(b::start).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("outboxMaxAge must be > outboxSweepMinAge + outboxSweepInterval (PT1M), but was PT1M");
    }

    @Test
    void healthIsUnhealthyOnlyWhileTheOldestPendingMessageIsOlderThanTheMaximumAge() {
        Duration max = Duration.ofMinutes(5);
        OutboxHealth young = new OutboxHealth(3, max, 0, max, null);
        OutboxHealth old = new OutboxHealth(3, max.plusMillis(1), 3, max, "message m to 'x' was rejected");

        assertThat(young.overdue()).isFalse();
        assertThat(old.overdue()).isTrue();
        assertThat(health(young).healthy()).isTrue();
        assertThat(health(old).healthy()).isFalse();
        assertThat(health(null).healthy()).as("a store without outbox").isTrue();
        assertThat(new ConsumerHealth(State.RUNNING, true, true, false, null, ATTACHED).outbox()).isNull();
        assertThatThrownBy(() -> new OutboxHealth(-1, Duration.ZERO, 0, max, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pending and failing must be >= 0");
    }

    private static ConsumerHealth health(OutboxHealth outbox) {
        return new ConsumerHealth(State.RUNNING, true, true, false, null, ATTACHED, outbox);
    }
}
