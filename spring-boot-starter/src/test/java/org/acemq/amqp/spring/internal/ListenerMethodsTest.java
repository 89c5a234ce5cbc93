package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import jakarta.validation.Valid;
import jakarta.validation.constraints.Positive;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.spring.AcemqMessageConverterCustomizer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.converter.MessageConverter;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.validation.beanvalidation.LocalValidatorFactoryBean;

/**
 * Listener methods through Spring Messaging, called directly (no broker): what each parameter receives for the
 * bodies an AMQP message can have, what a message that does not fit the method throws, and what fails the start.
 */
class ListenerMethodsTest {

    // an explicit message: the assertions must not depend on the JVM's default locale
    record Order(String id, @Positive(message = "must be greater than 0") int quantity) {
    }

    static final Map<String, Object> RECEIVED = new ConcurrentHashMap<>();

    static class Methods {
        @AcemqListener(address = "optional-payload")
        void optionalPayload(@Payload(required = false) Order order) {
            RECEIVED.put("optional-payload", String.valueOf(order));
        }

        @AcemqListener(address = "optional")
        void optional(Optional<Order> order) {
            RECEIVED.put("optional", order);
        }

        @AcemqListener(address = "required")
        void required(Order order) {
            RECEIVED.put("required", order);
        }

        @AcemqListener(address = "list")
        void list(List<Order> orders) {
            RECEIVED.put("list", orders);
        }

        @AcemqListener(address = "map-of-orders")
        void mapOfOrders(Map<String, Order> orders) {
            RECEIVED.put("map-of-orders", orders);
        }

        @AcemqListener(address = "number")
        void number(Integer n, @Header("count") int count, @Header(name = "absent", defaultValue = "9") int absent) {
            RECEIVED.put("number", n + " " + count + " " + absent);
        }

        @AcemqListener(address = "validated")
        void validated(@Valid Order order, Envelope envelope, MessageHeaders headers, Message<Order> message) {
            RECEIVED.put("validated", order + " " + envelope.id() + " " + headers.get("tenant") + " "
                    + message.getPayload());
        }

        @AcemqListener(address = "throws")
        void throwsChecked(String body) throws IOException {
            throw new IOException("disk full: " + body);
        }
    }

    static Map<String, ListenerMethod> methods(ListenerMethods factory, Object bean) {
        ListenerAnnotationProcessor processor = new ListenerAnnotationProcessor();
        processor.postProcessAfterInitialization(bean, "bean");
        Map<String, ListenerMethod> byAddress = new ConcurrentHashMap<>();
        processor.endpoints().forEach(e -> byAddress.put(e.attributes().get("address"), factory.create(e)));
        return byAddress;
    }

    static ListenerMethods withValidator() {
        return withValidator(List.of());
    }

    static ListenerMethods withValidator(List<AcemqMessageConverterCustomizer> customizers) {
        DefaultListableBeanFactory beans = new DefaultListableBeanFactory();
        LocalValidatorFactoryBean validator = new LocalValidatorFactoryBean();
        validator.afterPropertiesSet();
        beans.registerSingleton("validator", validator);
        return new ListenerMethods(beans, () -> customizers);
    }

    static TestEnvelope message(Object body, Map<String, Object> properties) {
        return new TestEnvelope("s:m-1", 1, body, properties);
    }

    @Test
    void aMessageWithoutABodyIsNullOrEmptyForAnOptionalPayloadAndADecodeErrorForARequiredOne() throws Exception {
        Map<String, ListenerMethod> m = methods(withValidator(), new Methods());
        m.get("optional-payload").handle(message(null, Map.of()));
        m.get("optional").handle(message(null, Map.of()));
        assertThat(RECEIVED).containsEntry("optional-payload", "null").containsEntry("optional", Optional.empty());
        assertThatThrownBy(() -> m.get("required").handle(message(null, Map.of())))
                .isInstanceOfSatisfying(PermanentMessageException.class,
                        e -> assertThat(e.condition()).isEqualTo("amqp:decode-error"))
                .hasMessageContaining("the message has no body");
    }

    @Test
    void amqpListsAndMapsAreConvertedElementByElementToGenericParameters() throws Exception {
        Map<String, ListenerMethod> m = methods(withValidator(), new Methods());
        m.get("list").handle(message(List.of(Map.of("id", "a", "quantity", 1), Map.of("id", "b", "quantity", 2L)),
                Map.of()));
        m.get("map-of-orders").handle(message(Map.of("x", Map.of("id", "c", "quantity", 3)), Map.of()));
        assertThat(RECEIVED.get("list")).isEqualTo(List.of(new Order("a", 1), new Order("b", 2)));
        assertThat(RECEIVED.get("map-of-orders")).isEqualTo(Map.of("x", new Order("c", 3)));
    }

    @Test
    void numbersAndHeadersAreConvertedToTheParametersTypes() throws Exception {
        Map<String, ListenerMethod> m = methods(withValidator(), new Methods());
        m.get("number").handle(message(42L, Map.of("count", "7")));
        assertThat(RECEIVED.get("number")).isEqualTo("42 7 9");
        assertThatThrownBy(() -> m.get("number").handle(message(42L, Map.of())))
                .isInstanceOfSatisfying(PermanentMessageException.class,
                        e -> assertThat(e.condition()).isEqualTo("amqp:decode-error"))
                .hasMessageContaining("parameter 1 (int) cannot be resolved from s:m-1 for Methods.number")
                .hasMessageContaining("count");
        assertThatThrownBy(() -> m.get("number").handle(message(42L, Map.of("count", "many"))))
                .isInstanceOfSatisfying(PermanentMessageException.class,
                        e -> assertThat(e.condition()).isEqualTo("amqp:decode-error"));
    }

    @Test
    void aValidPayloadReachesTheMethodWithTheOtherParametersAndAnInvalidOneIsAValidationFailure() throws Exception {
        Map<String, ListenerMethod> m = methods(withValidator(), new Methods());
        m.get("validated").handle(message("{\"id\":\"v\",\"quantity\":1}", Map.of("tenant", "acme")));
        assertThat(RECEIVED.get("validated")).isEqualTo("Order[id=v, quantity=1] s:m-1 acme Order[id=v, quantity=1]");
        assertThatThrownBy(() -> m.get("validated").handle(message("{\"id\":\"v\",\"quantity\":-1}", Map.of())))
                .isInstanceOfSatisfying(PermanentMessageException.class,
                        e -> assertThat(e.condition()).isEqualTo("acemq:validation-failed"))
                .hasMessage("the Order payload of Methods.validated is not valid: quantity: must be greater than 0");
        assertThat(m.get("validated").payload(message("{\"id\":\"v\",\"quantity\":-1}", Map.of())))
                .as("the key expression's payload is not validated").isEqualTo(new Order("v", -1));
    }

    @Test
    void whatTheMethodThrowsReachesTheRuntimeUnchanged() {
        Map<String, ListenerMethod> m = methods(withValidator(), new Methods());
        assertThatThrownBy(() -> m.get("throws").handle(message("x", Map.of())))
                .isExactlyInstanceOf(IOException.class).hasMessage("disk full: x");
    }

    @Test
    void aCustomizerAddsAConverterThatIsTriedFirst() throws Exception {
        AcemqMessageConverterCustomizer upperCase = converters -> converters.add(0, new MessageConverter() {
            @Override
            public Object fromMessage(Message<?> message, Class<?> targetClass) {
                return targetClass == Order.class ? new Order(message.getPayload().toString().toUpperCase(), 1)
                        : null;
            }

            @Override
            public Message<?> toMessage(Object payload, MessageHeaders headers) {
                return null;
            }
        });
        methods(withValidator(List.of(upperCase)), new Methods()).get("required").handle(message("plain", Map.of()));
        assertThat(RECEIVED.get("required")).isEqualTo(new Order("PLAIN", 1));
    }

    record Line(String orderId, int lineCount) {
    }

    static class Lines {
        @AcemqListener(address = "lines")
        void onLine(Line line) {
            RECEIVED.put("line", line);
        }
    }

    @Test
    @SuppressWarnings({"deprecation", "removal"})
    void jsonIsReadWithTheApplicationsJackson3MapperElseItsJackson2MapperElseAPlainOne() throws Exception {
        String snake = "{\"order_id\":\"o-1\",\"line_count\":2}";
        DefaultListableBeanFactory jackson2 = new DefaultListableBeanFactory();
        jackson2.registerSingleton("objectMapper", new com.fasterxml.jackson.databind.ObjectMapper()
                .setPropertyNamingStrategy(com.fasterxml.jackson.databind.PropertyNamingStrategies.SNAKE_CASE));
        assertThat(MessageConverters.json(jackson2))
                .isInstanceOf(org.springframework.messaging.converter.MappingJackson2MessageConverter.class);
        methods(new ListenerMethods(jackson2, List::of), new Lines()).get("lines").handle(message(snake, Map.of()));
        assertThat(RECEIVED.get("line")).as("Jackson 2 bean").isEqualTo(new Line("o-1", 2));

        DefaultListableBeanFactory both = new DefaultListableBeanFactory();
        both.registerSingleton("jsonMapper", tools.jackson.databind.json.JsonMapper.builder()
                .propertyNamingStrategy(tools.jackson.databind.PropertyNamingStrategies.SNAKE_CASE).build());
        both.registerSingleton("objectMapper", new com.fasterxml.jackson.databind.ObjectMapper());
        assertThat(MessageConverters.json(both))
                .isInstanceOf(org.springframework.messaging.converter.JacksonJsonMessageConverter.class);
        RECEIVED.remove("line");
        methods(new ListenerMethods(both, List::of), new Lines()).get("lines").handle(message(snake, Map.of()));
        assertThat(RECEIVED.get("line")).as("the Jackson 3 bean first").isEqualTo(new Line("o-1", 2));

        DefaultListableBeanFactory none = new DefaultListableBeanFactory();
        assertThat(MessageConverters.json(none)).as("a plain Jackson 3 mapper")
                .isInstanceOf(org.springframework.messaging.converter.JacksonJsonMessageConverter.class);
        methods(new ListenerMethods(none, List::of), new Lines()).get("lines")
                .handle(message("{\"orderId\":\"o-2\",\"lineCount\":3}", Map.of()));
        assertThat(RECEIVED.get("line")).isEqualTo(new Line("o-2", 3));
    }

    static class Unvalidated {
        @AcemqListener(address = "unvalidated")
        void onOrder(@Valid Order order) {
        }
    }

    static class Expression {
        @AcemqListener(address = "expression")
        void onOrder(@Payload(expression = "payload.id") String id) {
        }
    }

    @Test
    void parametersThatCannotBeResolvedFailWhenTheListenerIsMade() {
        ListenerMethods noValidator = new ListenerMethods(new DefaultListableBeanFactory(), List::of);
        assertThatThrownBy(() -> methods(noValidator, new Unvalidated()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("@AcemqListener method Unvalidated.onOrder: parameter 0 ("
                        + Order.class.getTypeName() + ") is to be validated (@Valid or @Validated), but the "
                        + "application has no Validator: add spring-boot-starter-validation");
        assertThatThrownBy(() -> methods(noValidator, new Expression()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("@AcemqListener method Expression.onOrder: parameter 0 (java.lang.String) has "
                        + "@Payload(expression = \"payload.id\"), which is not supported");
    }
}
