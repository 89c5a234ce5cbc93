package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.Message;
import org.junit.jupiter.api.Test;

/** The read stage: a delivery's facts (decoded or not, keyed or not, the consumer stopping, the store down). */
class ReaderTest {

    private static Subscription.Builder orders() {
        return Subscription.builder(Deliveries.ADDRESS, e -> { });
    }

    @Test
    void aDecodedMessageGetsItsScopedKeyEnvelopeAndFingerprint() throws Exception {
        Stages s = new Stages(orders().build());
        Delivery d = s.deliveries.of(Deliveries.message("order-1", "hello"));

        DeliveryFacts f = s.reader.read(d);

        assertThat(f.stage()).isEqualTo(DeliveryFacts.Stage.RECEIVED);
        assertThat(f.decodeError()).isNull();
        assertThat(f.hasKey()).isTrue();
        assertThat(f.stopping()).isFalse();
        assertThat(f.storeDown()).isFalse();
        assertThat(d.key).isEqualTo("orders|s:order-1");
        assertThat(d.message.messageId()).isEqualTo("order-1");
        assertThat(d.envelope.id()).as("the handler sees the store key").isEqualTo("orders|s:order-1");
        assertThat(d.envelope.messageId()).isEqualTo("order-1");
        assertThat(d.envelope.body()).isEqualTo("hello");
        assertThat(d.envelope.address()).isEqualTo("orders");
        assertThat(d.fingerprint).as("fingerprints are on by default (body)").matches("[0-9a-f]{32}");
        assertThat(d.state()).as("reading moves nothing").isEqualTo(Delivery.State.RECEIVED);
    }

    @Test
    void theFingerprintFollowsTheSubscriptionsSetting() throws Exception {
        Stages body = new Stages(orders().build());
        assertThat(fingerprint(body, Deliveries.message("a", "same"))).as("the body only: the id does not count")
                .isEqualTo(fingerprint(body, Deliveries.message("b", "same")))
                .isNotEqualTo(fingerprint(body, Deliveries.message("a", "other")));

        Stages off = new Stages(orders().fingerprint(Fingerprint.off()).build());
        Delivery d = off.deliveries.of(Deliveries.message("a", "same"));
        off.reader.read(d);
        assertThat(d.key).isEqualTo("orders|s:a");
        assertThat(d.fingerprint).as("off: none computed").isNull();

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
        Delivery d = s.deliveries.of(m);
        s.reader.read(d);
        return d.fingerprint;
    }

    @Test
    void anUndecodableMessageIsAFactNotAFailure() throws Exception {
        Stages s = new Stages(orders().build());
        Delivery d = s.deliveries.undecodable();

        DeliveryFacts f = s.reader.read(d);

        assertThat(f.stage()).isEqualTo(DeliveryFacts.Stage.RECEIVED);
        assertThat(f.decodeError()).contains("cannot be decoded");
        assertThat(f.hasKey()).isFalse();
        assertThat(d.key).isNull();
        assertThat(d.envelope).isNull();
        assertThat(s.policy.decide(f).reason()).as("what the policy makes of it")
                .isEqualTo(org.acemq.amqp.consumer.SettleReason.UNDECODABLE);
    }

    @Test
    void aMessageWithoutAMessageIdHasNoKey() throws Exception {
        Stages s = new Stages(orders().build());
        Delivery d = s.deliveries.of(Message.create("no id"));

        DeliveryFacts f = s.reader.read(d);

        assertThat(f.decodeError()).isNull();
        assertThat(f.hasKey()).isFalse();
        assertThat(d.key).isNull();
        assertThat(d.fingerprint).as("nothing to record it with").isNull();
        assertThat(d.message.body()).isEqualTo("no id");
    }

    @Test
    void stoppingAndAStoreKnownDownAreReadIntoTheFacts() throws Exception {
        Stages s = new Stages(orders().build());
        assertThat(s.reader.read(s.deliveries.of("a")).stopping()).isFalse();

        s.stopping.set(true);
        DeliveryFacts stopping = s.reader.read(s.deliveries.of("b"));
        assertThat(stopping.stopping()).isTrue();
        assertThat(stopping.storeDown()).isFalse();

        s.stopping.set(false);
        s.gate.failure(new StoreUnavailableException("test: down"));
        DeliveryFacts down = s.reader.read(s.deliveries.of("c"));
        assertThat(down.storeDown()).as("the gate paused the consumer").isTrue();
        assertThat(down.stopping()).isFalse();
        assertThat(down.hasKey()).isTrue();
        assertThat(s.log).as("reading asks the store nothing").isEmpty();
    }
}
