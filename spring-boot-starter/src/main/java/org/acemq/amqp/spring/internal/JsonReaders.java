package org.acemq.amqp.spring.internal;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.util.ClassUtils;

/**
 * Picks the JSON reader of the default body converter: the application's Jackson 3 mapper bean, else its Jackson 2
 * {@code ObjectMapper} bean, else a plain mapper of whichever Jackson is on the class path, else none. Each Jackson
 * generation is touched only when its classes are present.
 */
final class JsonReaders {

    private static final ClassLoader LOADER = JsonReaders.class.getClassLoader();
    static final boolean JACKSON_3 = ClassUtils.isPresent("tools.jackson.databind.json.JsonMapper", LOADER);
    static final boolean JACKSON_2 = ClassUtils.isPresent("com.fasterxml.jackson.databind.ObjectMapper", LOADER);

    private JsonReaders() {
    }

    static DefaultBodyConverter.JsonReader find(BeanFactory beans) {
        if (JACKSON_3) {
            tools.jackson.databind.ObjectMapper mapper = beans.getBeanProvider(
                    tools.jackson.databind.ObjectMapper.class).getIfUnique();
            if (mapper != null) {
                return new Jackson3Reader(mapper);
            }
        }
        if (JACKSON_2) {
            DefaultBodyConverter.JsonReader reader = Jackson2.fromBean(beans);
            if (reader != null) {
                return reader;
            }
        }
        if (JACKSON_3) {
            return new Jackson3Reader(tools.jackson.databind.json.JsonMapper.builder().findAndAddModules().build());
        }
        if (JACKSON_2) {
            return Jackson2.plain();
        }
        return null;
    }

    /** Separate so that a Jackson-3-only class path never loads a Jackson 2 type. */
    private static final class Jackson2 {
        static DefaultBodyConverter.JsonReader fromBean(BeanFactory beans) {
            com.fasterxml.jackson.databind.ObjectMapper mapper = beans.getBeanProvider(
                    com.fasterxml.jackson.databind.ObjectMapper.class).getIfUnique();
            return mapper == null ? null : new Jackson2Reader(mapper);
        }

        static DefaultBodyConverter.JsonReader plain() {
            return new Jackson2Reader(new com.fasterxml.jackson.databind.ObjectMapper().findAndRegisterModules());
        }
    }
}
