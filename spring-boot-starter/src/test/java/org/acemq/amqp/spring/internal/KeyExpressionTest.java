package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.acemq.amqp.api.Envelope;
import org.junit.jupiter.api.Test;
import org.springframework.expression.spel.SpelEvaluationException;

/**
 * Key expressions on their own, without a context: what they read and what they refuse. Runs on every Boot line
 * (tooling/spring-boot-lines), since SpEL is Spring Framework 6.2's on Boot 3.5 and 7's on Boot 4, and the map
 * accessor is the starter's own on both.
 */
class KeyExpressionTest {

    record Order(String orderId, int quantity) {
    }

    static Object key(String expression, Map<String, Object> headers) {
        KeyExpression.PayloadReader payload = envelope -> new Order("o-7", 2);
        Envelope envelope = new TestEnvelope("s:m-1", 1, "{}", headers);
        return KeyExpression.parse(expression, payload).function().apply(envelope);
    }

    @Test
    void readsHeadersAsPropertiesAndByIndexAndThePayloadsComponents() {
        assertThat(key("headers.orderId", Map.of("orderId", "o-1"))).isEqualTo("o-1");
        assertThat(key("headers['orderId']", Map.of("orderId", 42L))).isEqualTo(42L);
        assertThat(key("headers['missing']", Map.of())).as("a missing header by index: null, no key").isNull();
        assertThat(key("headers['tenant'] + ':' + payload.orderId", Map.of("tenant", "t1"))).isEqualTo("t1:o-7");
        assertThat(key("messageId", Map.of())).isEqualTo("m-1");
    }

    @Test
    void refusesMissingPropertiesWritesTypeReferencesAndMethodCalls() {
        assertThatThrownBy(() -> key("headers.missing", Map.of())).as("a missing header as a property")
                .isInstanceOf(SpelEvaluationException.class);
        assertThatThrownBy(() -> key("headers.orderId = 'x'", new java.util.HashMap<>(Map.of("orderId", "o-1"))))
                .as("no assignment").isInstanceOf(SpelEvaluationException.class);
        assertThatThrownBy(() -> key("T(java.lang.System).getProperty('user.home')", Map.of()))
                .as("no type references").isInstanceOf(SpelEvaluationException.class);
        assertThatThrownBy(() -> key("payload.toString()", Map.of())).as("no method calls")
                .isInstanceOf(SpelEvaluationException.class);
    }
}
