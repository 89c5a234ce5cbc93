package org.acemq.amqp.spring.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.reflect.Type;

/** JSON through a Jackson 2 {@code ObjectMapper}. Loaded only when Jackson 2 is. */
final class Jackson2Reader implements DefaultBodyConverter.JsonReader {

    private final ObjectMapper mapper;

    Jackson2Reader(ObjectMapper mapper) {
        this.mapper = mapper;
    }

    @Override
    public Object read(byte[] json, Type type) throws Exception {
        return mapper.readValue(json, mapper.getTypeFactory().constructType(type));
    }

    @Override
    public Object read(String json, Type type) throws Exception {
        return mapper.readValue(json, mapper.getTypeFactory().constructType(type));
    }

    @Override
    public String toString() {
        return "Jackson 2 " + mapper.getClass().getSimpleName();
    }
}
