package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.UUID;
import org.acemq.amqp.api.MessageIds;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.KeySource;
import org.acemq.amqp.consumer.MissingIdPolicy;
import org.acemq.amqp.consumer.SourceCapability;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.Message;
import org.junit.jupiter.api.Test;

/** The scope rule, the key sources and the fingerprint: what makes two deliveries "the same message". */
class KeysTest {

    private static Subscription.Builder on(String address) {
        return Subscription.builder(address, e -> { });
    }

    private static String scope(Subscription spec, String prefix) {
        return Keys.scopeOf(spec, prefix, "t0k3n");
    }

    private static String key(Subscription spec, Message<?> message) throws Exception {
        Keys keys = new Keys(spec, null);
        return keys.key(message, EnvelopeImpl.of(null, spec.address(), message, 0));
    }

    @Test
    void aQueueIsItsOwnScopeWhateverTheSubscriptionOrLinkIsCalled() {
        assertThat(scope(on("orders").build(), null)).isEqualTo("orders");
        assertThat(scope(on("orders").name("orders-a").linkName("link-a").build(), null))
                .as("competing links of one service on one queue share it").isEqualTo("orders");
        assertThat(scope(on("events::billing").build(), null)).isEqualTo("events::billing");
        assertThat(scope(on("events::audit").build(), null)).as("fan-out: each queue its own")
                .isNotEqualTo(scope(on("events::billing").build(), null));
        assertThat(scope(on("orders").sourceCapability(SourceCapability.NONE).build(), null)).isEqualTo("orders");
    }

    @Test
    void aNodeTheBrokerMakesPerLinkGivesEachConsumerInstanceAScopeOfItsOwn() {
        Subscription topic = on("events").sourceCapability(SourceCapability.TOPIC).build();
        assertThat(scope(topic, null)).isEqualTo("events#t0k3n");
        assertThat(new Keys(topic, null).scope()).as("two consumers on one topic address never share")
                .isNotEqualTo(new Keys(topic, null).scope()).startsWith("events#");
        for (String rabbit : new String[] {"/exchange/events/key", "/exchanges/events", "/topic/orders.*"}) {
            assertThat(scope(on(rabbit).build(), null)).as(rabbit).isEqualTo(rabbit + "#t0k3n");
        }
        assertThat(scope(on("/amq/queue/orders").build(), null)).isEqualTo("/amq/queue/orders");
        assertThat(scope(on("/queues/orders").build(), null)).isEqualTo("/queues/orders");
    }

    @Test
    void aPrefixNamespacesDerivedScopesAndAnExplicitScopeIsUsedAsItIs() {
        assertThat(scope(on("orders").build(), "billing-svc")).isEqualTo("billing-svc/orders");
        assertThat(scope(on("orders").scope("shared-ledger").build(), "billing-svc")).isEqualTo("shared-ledger");
        assertThatThrownBy(() -> on("orders").scope("bad\u0000scope")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> on("orders").scope(" ")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void anAddressTooLongForAScopeIsHashedToOneScopeStill() {
        String longAddress = "q".repeat(MessageIds.MAX_SCOPE_LENGTH + 1);
        String s = scope(on(longAddress).build(), null);
        assertThat(s).matches("h:[0-9a-f]{64}").isEqualTo(scope(on(longAddress).build(), null));
    }

    @Test
    void storeKeysAreScopedAndTheScopeIsEscapedSoNoTwoEndpointsShareAKey() throws Exception {
        Message<String> m = Message.create("body").messageId("order-1");
        assertThat(key(on("orders").build(), m)).isEqualTo("orders|s:order-1");
        assertThat(key(on("a|b").build(), m)).isEqualTo("a%7Cb|s:order-1");
        assertThat(MessageIds.scopeOf(key(on("a|b").build(), m))).isEqualTo("a|b");
        assertThat(key(on("a%7Cb").build(), m)).isEqualTo("a%257Cb|s:order-1");
        assertThat(key(on("orders").build(), Message.create("b").messageId(UUID.fromString(
                "00000000-0000-0000-0000-000000000001")))).isEqualTo("orders|u:00000000-0000-0000-0000-000000000001");
    }

    @Test
    void aKeyTooLongForItsScopeIsHashedAndTheWholeStaysStorable() throws Exception {
        String scopeName = "s".repeat(150);
        String id = "x".repeat(400);
        String key = key(on(scopeName).build(), Message.create("b").messageId(id));
        assertThat(key).startsWith(scopeName + "|h:").hasSize(150 + 1 + 66);
        assertThat(MessageIds.requireValid(key)).isEqualTo(key);
        String fits = "y".repeat(300);
        assertThat(key(on(scopeName).build(), Message.create("b").messageId(fits))).isEqualTo(scopeName + "|s:" + fits);
        assertThat(key(on("q").build(), Message.create("b").messageId("nul\u0000"))).matches("q\\|h:[0-9a-f]{64}");
    }

    @Test
    void aBusinessKeyComesFromAPropertyOrAFunctionAndAMessageWithoutOneHasNoKey() throws Exception {
        Subscription byProperty = on("orders").key(KeySource.applicationProperty("orderId")).build();
        Message<String> first = Message.create("b").messageId("attempt-1").property("orderId", "o-7");
        Message<String> retry = Message.create("b").messageId("attempt-2").property("orderId", "o-7");
        assertThat(key(byProperty, first)).isEqualTo("orders|p:orderId=s:o-7").isEqualTo(key(byProperty, retry));
        assertThat(key(byProperty, Message.create("b").messageId("m").property("orderId", 7L)))
                .as("typed like message-ids").isEqualTo("orders|p:orderId=n:7");
        assertThat(key(byProperty, Message.create("b").messageId("m"))).isNull();

        Subscription byFunction = on("orders").key(KeySource.of("body.orderId",
                e -> ((Map<?, ?>) e.body()).get("orderId"))).build();
        assertThat(key(byFunction, Message.create(Map.of("orderId", "o-9")).messageId("m-1")))
                .isEqualTo("orders|k:s:o-9");
        assertThat(key(byFunction, Message.create(Map.of("other", 1)).messageId("m-1"))).as("null: no key").isNull();
        Subscription throwing = on("orders").key(KeySource.of("boom", e -> {
            throw new IllegalStateException("boom");
        })).build();
        assertThat(key(throwing, Message.create("b").messageId("m-1"))).as("a failing function: no key").isNull();
    }

    @Test
    void theMissingIdPolicyStillAppliesToTheMessageIdSource() throws Exception {
        Subscription spec = on("orders").missingIdPolicy(MissingIdPolicy.applicationProperty("ref")).build();
        assertThat(key(spec, Message.create("b").property("ref", "r-1"))).isEqualTo("orders|p:ref=s:r-1");
        assertThat(key(spec, Message.create("b").messageId("m-1").property("ref", "r-1"))).isEqualTo("orders|s:m-1");
        assertThat(key(on("orders").build(), Message.create("b"))).isNull();
        assertThat(key(on("orders").missingIdPolicy(MissingIdPolicy.bodyHash()).build(), Message.create("b")))
                .matches("orders\\|h:body:[0-9a-f]{64}");
    }

    @Test
    void theFingerprintFollowsTheBodyAndTheNamedPropertiesOnly() throws Exception {
        Keys body = new Keys(on("q").build(), null);
        String a = body.fingerprint(Message.create("order 1: 10 EUR").messageId("m-1").property("trace", "x"));
        assertThat(a).matches("[0-9a-f]{32}");
        assertThat(body.fingerprint(Message.create("order 1: 10 EUR").messageId("m-2").property("trace", "y")))
                .as("id and unnamed properties do not count").isEqualTo(a);
        assertThat(body.fingerprint(Message.create("order 1: 99 EUR").messageId("m-1"))).isNotEqualTo(a);
        assertThat(body.fingerprint(Message.create(new byte[] {1, 2}))).isNotEqualTo(
                body.fingerprint(Message.create(new byte[] {1, 3})));

        Keys withAmount = new Keys(on("q").fingerprint(Fingerprint.body().withProperties("amount")).build(), null);
        String ten = withAmount.fingerprint(Message.create("o").property("amount", 10L));
        assertThat(withAmount.fingerprint(Message.create("o").property("amount", 11L))).isNotEqualTo(ten);
        assertThat(withAmount.fingerprint(Message.create("o").property("amount", "10"))).as("typed")
                .isNotEqualTo(ten);
        assertThat(withAmount.fingerprint(Message.create("o"))).as("absent").isNotEqualTo(ten);

        Keys off = new Keys(on("q").fingerprint(Fingerprint.off()).build(), null);
        assertThat(off.fingerprints()).isFalse();
        assertThat(off.fingerprint(Message.create("x"))).isNull();
        assertThatThrownBy(() -> Fingerprint.off().withProperties("a")).isInstanceOf(IllegalStateException.class);
    }
}
