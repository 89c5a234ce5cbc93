package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.testing.FaultInjectingStore;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.junit.jupiter.api.Test;

/**
 * The claim stage: one store call per batch, each answer in its delivery's facts, a refused key told apart from an
 * outage, and a copy with other content told apart from a duplicate.
 */
class StoreClaimsTest {

    private final Stages s = new Stages(Subscription.builder(Deliveries.ADDRESS, e -> { }).build());

    /** @return deliveries of these message-ids, read (as the admit stage reads them before claiming) */
    private List<Delivery> read(String... ids) {
        List<Delivery> ds = new ArrayList<>();
        for (String id : ids) {
            ds.add(read(s, s.deliveries.of(id)));
        }
        return ds;
    }

    private static Delivery read(Stages stages, Arrival taken) {
        Delivery d = new Delivery(stages.reader.read(taken));
        d.facts = DeliveryFacts.received(false, d.arrival.decodeError(), d.key() != null, stages.gate.paused());
        return d;
    }

    @Test
    void aBatchIsClaimedWithOneStoreCallAndEachAnswerGoesToItsDelivery() {
        s.advance(Duration.ofSeconds(5));
        List<Delivery> ds = read("a", "b", "c");

        s.claims.claim(ds);

        assertThat(s.log).containsExactly("acquireAll [orders|s:a, orders|s:b, orders|s:c]");
        for (Delivery d : ds) {
            assertThat(d.facts.stage()).isEqualTo(DeliveryFacts.Stage.CLAIMED);
            assertThat(d.facts.claim()).isEqualTo(ClaimResult.CLAIMED);
            assertThat(d.facts.attempt()).isEqualTo(1);
            assertThat(d.facts.holdsClaim()).isTrue();
            assertThat(d.claim.messageId()).isEqualTo(d.key());
            assertThat(d.claimedNanos).as("when it was granted, on the ticker").isEqualTo(s.time.read());
            assertThat(d.nextBeatNanos).as("no lease renewal configured").isZero();
            assertThat(d.envelope().attempt()).as("the handler sees the claim's attempt").isEqualTo(1);
            assertThat(d.state()).as("claiming moves nothing").isEqualTo(Delivery.State.RECEIVED);
        }
        assertThat(s.policy.decide(ds.get(0).facts)).isEqualTo(Verdict.RUN);
    }

    @Test
    void aKeyClaimedBeforeAndReleasedCountsItsAttempt() {
        Claim first = s.memory.acquire(s.key("a"));
        s.memory.release(first);
        Delivery d = read("a").get(0);

        s.claims.claim(List.of(d));

        assertThat(d.facts.attempt()).isEqualTo(2);
        assertThat(d.envelope().attempt()).isEqualTo(2);
        assertThat(s.log).as("a batch of one is a single claim").containsExactly("acquire [orders|s:a]");
    }

    @Test
    void aRefusedKeyIsThatMessagesFactAndTheOthersAreClaimedAgain() {
        List<Delivery> ds = read("a", "bad", "c");
        s.store.refuse(s.key("bad"));

        s.claims.claim(ds);

        assertThat(s.log).containsExactly("acquireAll [orders|s:a, orders|s:bad, orders|s:c]",
                "acquireAll [orders|s:a, orders|s:c]");
        Delivery bad = ds.get(1);
        assertThat(bad.facts.stage()).isEqualTo(DeliveryFacts.Stage.CLAIMED);
        assertThat(bad.facts.keyRefused()).isTrue();
        assertThat(bad.facts.claim()).isNull();
        assertThat(bad.facts.storeError()).contains("cannot hold this key");
        assertThat(bad.claim).isNull();
        assertThat(s.policy.decide(bad.facts).reason()).isEqualTo(SettleReason.INVALID_ID);
        for (Delivery d : List.of(ds.get(0), ds.get(2))) {
            assertThat(d.facts.claim()).as(d.key()).isEqualTo(ClaimResult.CLAIMED);
            assertThat(d.facts.keyRefused()).isFalse();
            assertThat(d.claim).isNotNull();
        }
        assertThat(s.gate.paused()).as("a refused key is no outage").isFalse();
        assertThat(s.gate.reachable()).isTrue();
        assertThat(s.pauses).hasValue(0);
    }

    @Test
    void aRefusalThatNamesNoKeyLeavesEachOfABatchToBeClaimedAloneAndRefusesALoneOne() {
        List<Delivery> ds = read("a", "bad", "c");
        s.store.refuse(s.key("bad"), false);

        s.claims.claim(ds);

        assertThat(s.log).hasSize(1);
        for (Delivery d : ds) {
            assertThat(d.claimAtStart).as(d.key()).isTrue();
            assertThat(d.claim).isNull();
            assertThat(d.facts.stage()).as("not answered yet").isEqualTo(DeliveryFacts.Stage.RECEIVED);
        }
        assertThat(s.gate.paused()).isFalse();

        Delivery alone = read("bad").get(0);
        s.claims.claim(List.of(alone));
        assertThat(alone.facts.keyRefused()).isTrue();
        assertThat(alone.claimAtStart).isFalse();
    }

    @Test
    void anOutageFailsEveryDeliveryOfTheBatchAndTellsTheGate() {
        List<Delivery> ds = read("a", "b");
        s.store.down(true);

        s.claims.claim(ds);

        assertThat(s.log).as("no retry here: the gate probes").hasSize(1);
        for (Delivery d : ds) {
            assertThat(d.facts.stage()).isEqualTo(DeliveryFacts.Stage.CLAIMED);
            assertThat(d.facts.claim()).isNull();
            assertThat(d.facts.keyRefused()).isFalse();
            assertThat(d.facts.storeError()).contains("down");
            assertThat(d.claim).isNull();
            assertThat(s.policy.decide(d.facts)).as("fail-closed: back to the broker")
                    .isEqualTo(Verdict.settle(Outcome.RELEASED, SettleReason.STORE_UNAVAILABLE));
        }
        assertThat(s.gate.paused()).isTrue();
        assertThat(s.pauses).hasValue(1);
        s.store.down(false);
        assertThat(s.memory.acquire(s.key("a")).result()).as("nothing was claimed")
                .isEqualTo(ClaimResult.CLAIMED);
    }

    @Test
    void aConfirmedKeyIsAlreadyConfirmedAndAKeyHeldElsewhereInProgress() {
        Claim done = s.memory.acquire(s.key("done"));
        s.memory.confirm(done);
        s.memory.newPeer().acquire(s.key("busy"));
        List<Delivery> ds = read("done", "busy", "new");

        s.claims.claim(ds);

        assertThat(s.log).hasSize(1);
        assertThat(ds).extracting(d -> d.facts.claim())
                .containsExactly(ClaimResult.ALREADY_CONFIRMED, ClaimResult.IN_PROGRESS, ClaimResult.CLAIMED);
        assertThat(ds.get(0).claim).as("no claim held for a duplicate").isNull();
        assertThat(ds.get(1).claim).isNull();
        assertThat(ds.get(0).facts.conflict()).as("same content").isFalse();
        assertThat(s.policy.decide(ds.get(0).facts)).isEqualTo(Verdict.DUPLICATE);
        assertThat(s.policy.decide(ds.get(1).facts).reason()).isEqualTo(SettleReason.IN_PROGRESS);
    }

    @Test
    void theSameKeyWithOtherContentIsAConflictNotADuplicate() {
        Delivery original = read(s, s.deliveries.of(Deliveries.message("k", "v1")));
        s.claims.claim(List.of(original));
        s.memory.confirm(original.claim);

        Delivery changed = read(s, s.deliveries.of(Deliveries.message("k", "v2")));
        Delivery copy = read(s, s.deliveries.of(Deliveries.message("k", "v1")));
        s.claims.claim(List.of(changed, copy));

        assertThat(changed.facts.claim()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(changed.facts.conflict()).isTrue();
        assertThat(changed.recordedFingerprint).isEqualTo(original.arrival.fingerprint()).isNotEqualTo(changed.arrival.fingerprint());
        assertThat(s.policy.decide(changed.facts).reason()).isEqualTo(SettleReason.CONFLICT);
        assertThat(copy.facts.conflict()).as("the same content: a duplicate").isFalse();
        assertThat(copy.recordedFingerprint).isNull();
        assertThat(s.policy.decide(copy.facts)).isEqualTo(Verdict.DUPLICATE);

        Stages off = new Stages(Subscription.builder(Deliveries.ADDRESS, e -> { })
                .fingerprint(Fingerprint.off()).build());
        Delivery first = read(off, off.deliveries.of(Deliveries.message("k", "v1")));
        off.claims.claim(List.of(first));
        off.memory.confirm(first.claim);
        Delivery other = read(off, off.deliveries.of(Deliveries.message("k", "v2")));
        off.claims.claim(List.of(other));
        assertThat(other.facts.conflict()).as("fingerprints off: any copy is a duplicate").isFalse();
        assertThat(off.policy.decide(other.facts)).isEqualTo(Verdict.DUPLICATE);
    }

    @Test
    void aStoreThatDoesNotBatchIsAskedKeyByKey() {
        InMemoryIdempotencyStore memory = InMemoryIdempotencyStore.builder().build();
        FaultInjectingStore faults = new FaultInjectingStore(memory);
        IdempotencyStore plain = faults.plainStore();
        SafeObserver observer = new SafeObserver(ConsumerObserver.NOOP);
        StoreAccess access = new StoreAccess(plain, observer, s.time);
        StoreClaims claims = new StoreClaims("orders", access, s.gate, observer, s.time, 0, true);
        memory.claim(s.key("b"));
        memory.confirm(s.key("b"));
        List<Delivery> ds = read("a", "b", "c");

        claims.claim(ds);

        assertThat(faults.history()).filteredOn(c -> c.operation() == StoreOperation.CLAIM)
                .extracting(c -> c.keys().get(0)).containsExactly(s.key("a"), s.key("b"), s.key("c"));
        assertThat(ds).extracting(d -> d.facts.claim())
                .containsExactly(ClaimResult.CLAIMED, ClaimResult.ALREADY_CONFIRMED, ClaimResult.CLAIMED);
        assertThat(ds.get(0).facts.attempt()).as("attempts counted in this process").isEqualTo(1);
    }
}
