package org.acemq.amqp.spring.internal;

import java.util.ArrayList;
import java.util.List;
import org.acemq.amqp.spring.AcemqMessageConverterCustomizer;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.core.convert.ConversionService;
import org.springframework.messaging.Message;
import org.springframework.messaging.converter.CompositeMessageConverter;
import org.springframework.messaging.converter.GenericMessageConverter;
import org.springframework.messaging.converter.MessageConverter;
import org.springframework.messaging.converter.SmartMessageConverter;
import org.springframework.messaging.converter.StringMessageConverter;
import org.springframework.util.ClassUtils;

/**
 * The Spring message converters of the listener methods' payloads (see {@link AcemqMessageConverterCustomizer} for
 * the list and its order), and the choice of the JSON converter: the application's Jackson 3 {@code JsonMapper}
 * bean with Spring Framework 7's {@code JacksonJsonMessageConverter}, else its Jackson 2 {@code ObjectMapper} bean
 * with {@code MappingJackson2MessageConverter}, else a plain mapper of whichever of the two is on the class path,
 * else none. A Jackson generation (and a Spring converter class) is touched only when its classes are present, so
 * the same code runs on Spring Framework 6.2 (Boot 3.5, Jackson 2) and 7 (Boot 4, Jackson 3 and perhaps 2).
 */
final class MessageConverters {

    private static final ClassLoader LOADER = MessageConverters.class.getClassLoader();
    static final boolean JACKSON_3 = ClassUtils.isPresent("tools.jackson.databind.json.JsonMapper", LOADER)
            && ClassUtils.isPresent("org.springframework.messaging.converter.JacksonJsonMessageConverter", LOADER);
    static final boolean JACKSON_2 = ClassUtils.isPresent("com.fasterxml.jackson.databind.ObjectMapper", LOADER)
            && ClassUtils.isPresent("org.springframework.messaging.converter.MappingJackson2MessageConverter", LOADER);

    private MessageConverters() {
    }

    /**
     * @param beans the application's beans (for its Jackson mapper)
     * @param conversionService the conversion service of the last converter
     * @param customizers the application's customizers, in order
     * @return the converters, customized, as one
     */
    static CompositeMessageConverter create(BeanFactory beans, ConversionService conversionService,
            List<AcemqMessageConverterCustomizer> customizers) {
        List<MessageConverter> converters = new ArrayList<>();
        SmartMessageConverter json = json(beans);
        converters.add(new BytesToString());
        converters.add(new AmqpBodyMessageConverter(json));
        if (json != null) {
            converters.add(json);
        }
        converters.add(new GenericMessageConverter(conversionService));
        for (AcemqMessageConverterCustomizer customizer : customizers) {
            customizer.customize(converters);
        }
        if (converters.isEmpty()) {
            throw new IllegalStateException("The AcemqMessageConverterCustomizer beans " + customizers + " removed "
                    + "every message converter; @AcemqListener payloads need at least one");
        }
        return new CompositeMessageConverter(converters);
    }

    /** Spring's String converter, asked only about bodies it can read (it casts anything but a String to bytes). */
    private static final class BytesToString extends StringMessageConverter {
        @Override
        protected boolean canConvertFrom(Message<?> message, Class<?> targetClass) {
            return message.getPayload() instanceof byte[] && super.canConvertFrom(message, targetClass);
        }
    }

    /** @return the JSON converter, or null without Jackson */
    static SmartMessageConverter json(BeanFactory beans) {
        if (JACKSON_3) {
            SmartMessageConverter fromBean = Jackson3.fromBean(beans);
            if (fromBean != null) {
                return fromBean;
            }
        }
        if (JACKSON_2) {
            SmartMessageConverter fromBean = Jackson2.fromBean(beans);
            if (fromBean != null) {
                return fromBean;
            }
        }
        if (JACKSON_3) {
            return Jackson3.plain();
        }
        if (JACKSON_2) {
            return Jackson2.plain();
        }
        return null;
    }

    /** Separate so that a class path without Jackson 3 (or Spring Framework 6) never loads its types. */
    private static final class Jackson3 {
        static SmartMessageConverter fromBean(BeanFactory beans) {
            tools.jackson.databind.json.JsonMapper mapper = beans.getBeanProvider(
                    tools.jackson.databind.json.JsonMapper.class).getIfUnique();
            return mapper == null ? null
                    : new org.springframework.messaging.converter.JacksonJsonMessageConverter(mapper);
        }

        static SmartMessageConverter plain() {
            return new org.springframework.messaging.converter.JacksonJsonMessageConverter(
                    tools.jackson.databind.json.JsonMapper.builder().findAndAddModules().build());
        }
    }

    /** Separate so that a Jackson-3-only class path never loads a Jackson 2 type. */
    @SuppressWarnings({"deprecation", "removal"})
    private static final class Jackson2 {
        static SmartMessageConverter fromBean(BeanFactory beans) {
            com.fasterxml.jackson.databind.ObjectMapper mapper = beans.getBeanProvider(
                    com.fasterxml.jackson.databind.ObjectMapper.class).getIfUnique();
            return mapper == null ? null : converter(mapper);
        }

        static SmartMessageConverter plain() {
            return converter(new com.fasterxml.jackson.databind.ObjectMapper().findAndRegisterModules());
        }

        private static SmartMessageConverter converter(com.fasterxml.jackson.databind.ObjectMapper mapper) {
            org.springframework.messaging.converter.MappingJackson2MessageConverter converter =
                    new org.springframework.messaging.converter.MappingJackson2MessageConverter();
            converter.setObjectMapper(mapper);
            return converter;
        }
    }
}
