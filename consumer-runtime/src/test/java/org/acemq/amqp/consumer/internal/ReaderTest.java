package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.KeySource;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.Message;
import org.junit.jupiter.api.Test;

/**
 * The read stage: what arrived (decoded or not, keyed or not, its fingerprint and envelope), and the facts the
 * pipeline states from it (the consumer stopping, the store down).
 */
class ReaderTest {

    private static Subscription.Builder orders() {
        return Subscription.builder(Deliveries.ADDRESS, e -> { });
    }

    @Test
    void aDecodedMessageGetsItsScopedKeyEnvelopeAndFingerprint() throws Exception {
        Stages s = new Stages(orders().build());

        Arrival a = s.reader.read(s.deliveries.of(Deliveries.message("order-1", "hello")));

        assertThat(a.decodeError()).isNull();
        assertThat(a.key()).isEqualTo("orders|s:order-1");
        assertThat(a.message().messageId()).isEqualTo("order-1");
        assertThat(a.envelope().id()).as("the handler sees the store key").isEqualTo("orders|s:order-1");
        assertThat(a.envelope().messageId()).isEqualTo("order-1");
        assertThat(a.envelope().body()).isEqualTo("hello");
        assertThat(a.envelope().address()).isEqualTo("orders");
        assertThat(a.fingerprint()).as("fingerprints are on by default (body)").matches("[0-9a-f]{32}");
        assertThat(a.orderKey()).as("the subscription does not order").isNull();
    }

    @Test
    void theEncodedSizeIsRecordedAndReencodingGivesItWhenTheTransfersBytesCannotBeRead() throws Exception {
        Stages s = new Stages(orders().orderBy(KeySource.messageId()).build());
        Message<String> m = Deliveries.message("order-1", "x".repeat(5_000));

        Arrival a = s.reader.read(s.deliveries.of(m));

        // the test's deliveries carry no transfer bytes: the message is encoded again, as on another protonj2
        int encoded = m.toAdvancedMessage().encode(null).getReadableBytes();
        assertThat(encoded).isGreaterThan(5_000);
        assertThat(a.encodedSize()).isEqualTo(encoded);
        assertThat(Reader.encodedSize(m)).isEqualTo(encoded);
        assertThat(s.reader.read(s.deliveries.undecodable()).encodedSize()).as("nothing decoded").isZero();
    }

    @Test
    void anUnorderedSubscriptionDoesNotReencodeForTheSizeOnlyTheParkUses() throws Exception {
        Stages s = new Stages(orders().build());

        Arrival a = s.reader.read(s.deliveries.of(Deliveries.message("order-1", "x".repeat(5_000))));

        assertThat(a.encodedSize()).as("no transfer bytes and no park to size: not encoded again").isZero();
    }

    @Test
    void theFingerprintFollowsTheSubscriptionsSetting() throws Exception {
        Stages body = new Stages(orders().build());
        assertThat(fingerprint(body, Deliveries.message("a", "same"))).as("the body only: the id does not count")
                .isEqualTo(fingerprint(body, Deliveries.message("b", "same")))
                .isNotEqualTo(fingerprint(body, Deliveries.message("a", "other")));

        Stages off = new Stages(orders().fingerprint(Fingerprint.off()).build());
        Arrival a = off.reader.read(off.deliveries.of(Deliveries.message("a", "same")));
        assertThat(a.key()).isEqualTo("orders|s:a");
        assertThat(a.fingerprint()).as("off: none computed").isNull();

        Stages withTenant = new Stages(orders().fingerprint(Fingerprint.body().withProperties("tenant")).build());
        Message<String> acme = Deliveries.message("a", "same").property("tenant", "acme");
        Message<String> globex = Deliveries.message("a", "same").property("tenant", "globex");
        assertThat(fingerprint(withTenant, acme)).as("a listed property counts")
                .isNotEqualTo(fingerprint(withTenant, globex))
                .isEqualTo(fingerprint(withTenant, Deliveries.message("a", "same").property("tenant", "acme")))
                .isNotEqualTo(fingerprint(body, Deliveries.message("a", "same")));
        assertThat(fingerprint(body, acme)).as("an unlisted property does not")
                .isEqualTo(fingerprint(body, globex));
    }

    private static String fingerprint(Stages s, Message<?> m) {
        return s.reader.read(s.deliveries.of(m)).fingerprint();
    }

    @Test
    void anUndecodableMessageIsAFactNotAFailure() {
        Stages s = new Stages(orders().build());

        Arrival a = s.reader.read(s.deliveries.undecodable());

        assertThat(a.decodeError()).contains("cannot be decoded");
        assertThat(a.key()).isNull();
        assertThat(a.envelope()).isNull();
        DeliveryFacts f = DeliveryFacts.received(false, a.decodeError(), false, false);
        assertThat(s.policy.decide(f).reason()).as("what the policy makes of it")
                .isEqualTo(org.acemq.amqp.consumer.SettleReason.UNDECODABLE);
    }

    @Test
    void aMessageWithoutAMessageIdHasNoKey() throws Exception {
        Stages s = new Stages(orders().build());

        Arrival a = s.reader.read(s.deliveries.of(Message.create("no id")));

        assertThat(a.decodeError()).isNull();
        assertThat(a.key()).isNull();
        assertThat(a.fingerprint()).as("nothing to record it with").isNull();
        assertThat(a.message().body()).isEqualTo("no id");
    }

    @Test
    void stoppingAndAStoreKnownDownAreStatedWhenABatchIsAdmitted() {
        Stages s = new Stages(orders().build());
        s.stopping.set(true);
        assertThat(s.admitted("b")).isEmpty();
        assertThat(s.settlement.summary()).as("stopping: it goes back").containsExactly("b RELEASED/SHUTDOWN");

        s.stopping.set(false);
        s.gate.failure(new StoreUnavailableException("test: down"));
        assertThat(s.admitted("c")).isEmpty();
        assertThat(s.settlement.summary()).as("the gate paused the consumer: not claimed")
                .containsExactly("b RELEASED/SHUTDOWN", "c RELEASED/STORE_UNAVAILABLE");
        assertThat(s.claimCalls()).as("reading asks the store nothing").isZero();
    }
}
