package org.acemq.amqp.samples;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;
import org.junit.jupiter.api.Test;

class DemoObserverTest {

    /** A consumer takes one observer: if the runtime adds a callback, DemoObserver must pass it on too. */
    @Test
    void overridesEveryConsumerObserverCallbackSoThatNoneIsLostOnTheWayToMicrometer() {
        List<String> missing = new ArrayList<>();
        for (Method m : ConsumerObserver.class.getMethods()) {
            if (Modifier.isStatic(m.getModifiers())) {
                continue;
            }
            try {
                DemoObserver.class.getDeclaredMethod(m.getName(), m.getParameterTypes());
            } catch (NoSuchMethodException e) {
                missing.add(m.toString());
            }
        }
        assertThat(missing).as("ConsumerObserver methods DemoObserver does not pass on").isEmpty();
    }

    @Test
    void countsAndPassesEveryCallbackOn() {
        List<String> seen = new ArrayList<>();
        ConsumerObserver.HandlerScope scope = outcome -> seen.add("scope closed " + outcome);
        DemoObserver observer = new DemoObserver(new ConsumerObserver() {
            @Override
            public void claim(String subscription, ClaimResult result) {
                seen.add("claim " + result);
            }

            @Override
            public void claimFailed(String subscription) {
                seen.add("claim failed");
            }

            @Override
            public void settled(String subscription, Outcome outcome, SettleReason reason) {
                seen.add("settled " + outcome + " " + reason);
            }

            @Override
            public void abandoned(String subscription) {
                seen.add("abandoned");
            }

            @Override
            public void handled(String subscription, long nanos, boolean success) {
                seen.add("handled " + success);
            }

            @Override
            public HandlerScope handlerStarting(String subscription, String address, Map<String, Object> properties) {
                seen.add("starting " + address);
                return scope;
            }

            @Override
            public void storeCall(StoreOperation operation, long nanos, boolean success) {
                seen.add("store " + operation + " " + success);
            }

            @Override
            public void storeCall(StoreOperation operation, long nanos, boolean success, int keys) {
                seen.add("store " + operation + " " + success + " " + keys);
            }

            @Override
            public void storeBypassed(String subscription) {
                seen.add("bypassed");
            }

            @Override
            public void paused(boolean paused) {
                seen.add("paused " + paused);
            }

            @Override
            public void connectionInterrupted(boolean interrupted) {
                seen.add("interrupted " + interrupted);
            }
        });

        observer.claim("s", ClaimResult.CLAIMED);
        observer.claimFailed("s");
        assertThat(observer.handlerStarting("s", "orders", Map.of())).isSameAs(scope);
        observer.handled("s", 1_000, true);
        observer.storeCall(StoreOperation.CONFIRM, 1_000, true);
        observer.storeCall(StoreOperation.CLAIM, 1_000, true, 7);
        observer.settled("s", Outcome.ACCEPTED, SettleReason.PROCESSED);
        observer.settled("s", Outcome.ACCEPTED, SettleReason.DUPLICATE);
        observer.settled("s", Outcome.MODIFIED, SettleReason.FAILED);
        observer.abandoned("s");
        observer.storeBypassed("s");
        observer.paused(true);
        observer.connectionInterrupted(true);

        assertThat(seen).containsExactly("claim CLAIMED", "claim failed", "starting orders", "handled true", "store CONFIRM true",
                "store CLAIM true 7",
                "settled ACCEPTED PROCESSED", "settled ACCEPTED DUPLICATE", "settled MODIFIED FAILED", "abandoned",
                "bypassed", "paused true", "interrupted true");
        assertThat(observer.finallySettled()).isEqualTo(2);
        assertThat(observer.settled(SettleReason.DUPLICATE)).isEqualTo(1);
        assertThat(observer.settled(SettleReason.FAILED)).isEqualTo(1);
        assertThat(observer.abandoned()).isEqualTo(1);
        assertThat(observer.interruptions()).isEqualTo(1);
    }
}
