package org.acemq.amqp.spring.internal;

import java.lang.reflect.Type;
import tools.jackson.databind.ObjectMapper;

/** JSON through a Jackson 3 mapper (Spring Boot 4's default {@code JsonMapper}). Loaded only when Jackson 3 is. */
final class Jackson3Reader implements DefaultBodyConverter.JsonReader {

    private final ObjectMapper mapper;

    Jackson3Reader(ObjectMapper mapper) {
        this.mapper = mapper;
    }

    @Override
    public Object read(byte[] json, Type type) {
        return mapper.readValue(json, mapper.getTypeFactory().constructType(type));
    }

    @Override
    public Object read(String json, Type type) {
        return mapper.readValue(json, mapper.getTypeFactory().constructType(type));
    }

    @Override
    public String toString() {
        return "Jackson 3 " + mapper.getClass().getSimpleName();
    }
}
