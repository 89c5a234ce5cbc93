package org.acemq.amqp.spring;

import java.util.List;
import org.springframework.messaging.converter.MessageConverter;

/**
 * Adjusts the Spring {@link MessageConverter}s that turn a message's body into an {@link AcemqListener} method's
 * payload parameter. Declare beans of this type (ordered, like any customizer); each is called once, when the
 * listeners are set up, with the starter's converters in the order they are tried, and may add (index 0: tried
 * first), remove or replace entries. The first converter that returns a value wins; one that throws ends the
 * conversion, and the message is rejected with condition {@code amqp:decode-error}.
 *
 * <p>The starter's converters, in order: {@code StringMessageConverter} (bytes to a {@code String}, UTF-8 unless
 * the {@code contentType} says otherwise); a converter of AMQP bodies ({@code String} to {@code byte[]} in UTF-8;
 * an AMQP map or list to any type, through the JSON converter); the JSON converter on the application's Jackson
 * mapper ({@code JacksonJsonMessageConverter} with the Jackson 3 {@code JsonMapper} bean on Spring Framework 7,
 * else {@code MappingJackson2MessageConverter} with the Jackson 2 {@code ObjectMapper} bean; absent without
 * Jackson); a {@code GenericMessageConverter} on a {@code DefaultFormattingConversionService} (numbers, and other
 * conversions Spring's conversion service knows). A body that already has the parameter's type is passed as it is,
 * without a converter.
 *
 * <pre>{@code
 * @Bean
 * AcemqMessageConverterCustomizer protobuf() {
 *     return converters -> converters.add(0, new ProtobufMessageConverter());
 * }
 * }</pre>
 */
@FunctionalInterface
public interface AcemqMessageConverterCustomizer {

    /** @param converters the converters, in the order they are tried; modifiable */
    void customize(List<MessageConverter> converters);
}
