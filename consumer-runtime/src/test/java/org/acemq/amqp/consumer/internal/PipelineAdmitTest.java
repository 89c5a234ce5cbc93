package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.consumer.StoreOperation;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.Message;
import org.junit.jupiter.api.Test;

/**
 * The admit stage: a batch read, claimed with one store call, and split into what runs (admitted, in order) and what
 * is decided without running (settled through the end and settle stages at once).
 */
class PipelineAdmitTest {

    private final List<String> handled = new CopyOnWriteArrayList<>();
    private final Stages s = new Stages(Subscription.builder(Deliveries.ADDRESS, e -> handled.add(e.id()))
            .maxAttempts(2).build());

    private void confirmed(String id) {
        Claim c = s.memory.acquire(s.key(id));
        s.memory.confirm(c);
    }

    @Test
    void theAdmittedAreReturnedInOrderAndClaimedTogether() {
        List<Delivery> run = s.admitted("a", "b", "c");

        assertThat(run).extracting(d -> d.key()).containsExactly(s.key("a"), s.key("b"), s.key("c"));
        assertThat(run).allSatisfy(d -> {
            assertThat(d.state()).isEqualTo(Delivery.State.ADMITTED);
            assertThat(d.claim).isNotNull();
            assertThat(d.claimAtStart).isFalse();
        });
        assertThat(s.log).containsExactly("acquireAll [orders|s:a, orders|s:b, orders|s:c]");
        assertThat(s.settlement.sent).isEmpty();
        assertThat(handled).as("admitting runs no handler").isEmpty();
    }

    @Test
    void theSameKeyTwiceInOneBatchIsClaimedOnceAndItsCopyWhenAThreadStartsIt() {
        List<Delivery> run = s.admitted("a", "b", "a");

        assertThat(run).hasSize(3).allSatisfy(d -> assertThat(d.state()).isEqualTo(Delivery.State.ADMITTED));
        assertThat(s.log).containsExactly("acquireAll [orders|s:a, orders|s:b]");
        Delivery copy = run.get(2);
        assertThat(copy.claimAtStart).isTrue();
        assertThat(copy.claim).isNull();
        assertThat(run.get(0).claimAtStart).isFalse();

        for (Delivery d : run) {
            s.pipeline.run(d);
        }
        assertThat(handled).as("the copy finds the first one confirmed").containsExactly(s.key("a"), s.key("b"));
        assertThat(s.settlement.summary()).containsExactly("a ACCEPTED/PROCESSED", "b ACCEPTED/PROCESSED",
                "a ACCEPTED/DUPLICATE");
    }

    @Test
    void aDuplicateIsSettledAcceptedWithoutRunning() {
        confirmed("dup");

        List<Delivery> run = s.admitted("dup", "new");

        assertThat(run).extracting(d -> d.key()).containsExactly(s.key("new"));
        assertThat(s.settlement.summary()).containsExactly("dup ACCEPTED/DUPLICATE");
        assertThat(s.settlement.sent.get(0).state()).isEqualTo(Delivery.State.SETTLED);
        assertThat(handled).isEmpty();
    }

    @Test
    void badInputIsRejectedAtOnceWithoutAskingTheStore() throws Exception {
        Arrival undecodable = s.deliveries.undecodable();
        Arrival noId = s.deliveries.of(Message.create("no id"));
        Arrival good = s.deliveries.of("good");

        List<Delivery> run = s.pipeline.admit(List.of(undecodable, noId, good));

        assertThat(run).extracting(d -> d.arrival.amqp()).containsExactly(good.amqp());
        assertThat(s.settlement.summary()).containsExactly("null REJECTED/UNDECODABLE", "null REJECTED/MISSING_ID");
        Delivery first = s.settlement.sent.get(0).delivery();
        assertThat(first.arrival.amqp()).isSameAs(undecodable.amqp());
        assertThat(first.state()).isEqualTo(Delivery.State.SETTLED);
        assertThat(first.completed).isTrue();
        assertThat(s.settlement.sent.get(1).delivery().state()).isEqualTo(Delivery.State.SETTLED);
        assertThat(s.log).as("decided before the claim; only the good one is claimed")
                .containsExactly("settle [null] REJECTED/UNDECODABLE", "settle [null] REJECTED/MISSING_ID",
                        "acquire [orders|s:good]");
    }

    @Test
    void aCopyInProgressElsewhereIsHeldForTheInProgressDelayThenReleased() {
        s.memory.newPeer().acquire(s.key("busy"));
        Arrival busy = s.deliveries.of("busy");

        List<Delivery> run = s.pipeline.admit(List.of(busy));

        assertThat(run).isEmpty();
        assertThat(s.settlement.sent).as("held, not settled").isEmpty();

        s.advance(Subscription.DEFAULT_IN_PROGRESS_DELAY.minusMillis(1));
        assertThat(s.settlement.sent).isEmpty();
        s.advance(Duration.ofMillis(1));
        assertThat(s.settlement.summary()).containsExactly("busy RELEASED/IN_PROGRESS");
        assertThat(s.settlement.sent.get(0).delivery().arrival.amqp()).isSameAs(busy.amqp());
        assertThat(s.settlement.sent.get(0).delivery().state()).isEqualTo(Delivery.State.SETTLED);
    }

    @Test
    void aPoisonMessageIsRejectedAtAdmissionItsClaimReleasedFirst() {
        for (int i = 0; i < 2; i++) { // two earlier attempts that did not finish
            s.memory.release(s.memory.acquire(s.key("poison")));
        }

        List<Delivery> run = s.admitted("poison");

        assertThat(run).isEmpty();
        assertThat(handled).isEmpty();
        assertThat(s.settlement.summary()).containsExactly("poison REJECTED/POISON");
        assertThat(s.log).containsExactly("acquire [orders|s:poison]", "release [orders|s:poison]",
                "settle [orders|s:poison] REJECTED/POISON");
    }

    @Test
    void aRefusedKeyIsRejectedAndTheRestOfTheBatchAdmitted() {
        s.store.refuse(s.key("bad"));

        List<Delivery> run = s.admitted("a", "bad", "c");

        assertThat(run).extracting(d -> d.key()).containsExactly(s.key("a"), s.key("c"));
        assertThat(s.settlement.summary()).containsExactly("bad REJECTED/INVALID_ID");
    }

    @Test
    void aStoreOutageReleasesTheWholeBatchAndAStoreKnownDownIsNotAsked() {
        s.store.down(true);

        assertThat(s.admitted("a", "b")).isEmpty();

        assertThat(s.settlement.summary()).containsExactly("a RELEASED/STORE_UNAVAILABLE",
                "b RELEASED/STORE_UNAVAILABLE");
        assertThat(s.gate.paused()).isTrue();
        int calls = s.log.size();

        assertThat(s.admitted("c")).isEmpty();
        assertThat(s.settlement.summary()).endsWith("c RELEASED/STORE_UNAVAILABLE");
        assertThat(s.log).as("paused: no claim tried").hasSize(calls + 1);
    }

    @Test
    void whileStoppingNothingIsClaimedAndEverythingGoesBack() {
        s.stopping.set(true);

        assertThat(s.admitted("a", "b")).isEmpty();

        assertThat(s.settlement.summary()).containsExactly("a RELEASED/SHUTDOWN", "b RELEASED/SHUTDOWN");
        assertThat(s.claimCalls()).isZero();
    }

    @Test
    void anErrorFromTheStoreSettlesTheBatchAsAnUnexpectedFailure() {
        s.store.failWith(StoreOperation.CLAIM, new NoClassDefFoundError("test: a linkage error in the store"));
        List<Delivery> run = s.pipeline.admit(List.of(s.deliveries.of("a"), s.deliveries.of("b")));

        assertThat(run).isEmpty();
        assertThat(s.settlement.summary()).containsExactly("a RELEASED/FAILED", "b RELEASED/FAILED");
        Delivery a = s.settlement.sent.get(0).delivery();
        Delivery b = s.settlement.sent.get(1).delivery();
        assertThat(List.of(a.state(), b.state())).containsOnly(Delivery.State.SETTLED);
        assertThat(a.completed).isTrue();
        assertThat(s.gate.paused()).as("an error is no outage").isFalse();
    }

    @Test
    void aRejectionHandlerThatTakesARejectionOverHasItAcceptedAndAPoisonClaimConfirmed() {
        List<String> asked = new CopyOnWriteArrayList<>();
        Stages accepting = new Stages(Subscription.builder(Deliveries.ADDRESS, e -> handled.add(e.id()))
                .maxAttempts(1)
                .rejectionHandler(r -> {
                    asked.add(r.reason().name());
                    return org.acemq.amqp.consumer.RejectionHandler.Decision.ACCEPT;
                }).build());
        accepting.memory.release(accepting.memory.acquire(accepting.key("poison")));
        Arrival undecodable = accepting.deliveries.undecodable();
        Arrival poison = accepting.deliveries.of("poison");

        List<Delivery> run = accepting.pipeline.admit(List.of(undecodable, poison));

        assertThat(run).isEmpty();
        assertThat(handled).isEmpty();
        assertThat(asked).containsExactly("UNDECODABLE", "POISON");
        assertThat(accepting.settlement.summary()).containsExactly("null ACCEPTED/UNDECODABLE",
                "poison ACCEPTED/POISON");
        assertThat(accepting.log).as("taken over: done, so its claim is confirmed, not released")
                .containsSubsequence("confirm [orders|s:poison]", "settle [orders|s:poison] ACCEPTED/POISON");
        assertThat(accepting.memory.isConfirmed(accepting.key("poison"))).isTrue();
    }
}
