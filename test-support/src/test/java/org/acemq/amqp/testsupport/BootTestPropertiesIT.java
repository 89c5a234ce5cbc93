package org.acemq.amqp.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.testsupport.spring.AcemqTestContextCustomizerFactory;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.test.context.ContextCustomizer;

/**
 * {@link BootTestProperties} and the Spring test wiring, through fixture classes run by the JUnit engine test kit: the
 * properties name the class's broker and schema while its tests run (and its nested classes' tests), and nothing
 * after; the customizer factory acts on classes that declare the extensions, and a customizer whose extensions have
 * not started fails with a message saying why.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BootTestPropertiesIT {

    static final List<Map<String, String>> SEEN = new CopyOnWriteArrayList<>();
    static final List<String> EXPECTED = new CopyOnWriteArrayList<>();

    static class BrokerAndSchema {
        @RegisterExtension
        static final EmbeddedArtemisExtension ARTEMIS = EmbeddedArtemisExtension.of(
                EmbeddedArtemis.builder().requireCredentials("app", "pw"));

        @RegisterExtension
        static final PostgresExtension POSTGRES = PostgresExtension.newSchema();

        @Test
        void seesBoth() {
            SEEN.add(BootTestProperties.of(BrokerAndSchema.class));
            EXPECTED.add(Integer.toString(ARTEMIS.port()));
            EXPECTED.add(POSTGRES.jdbcUrl());
        }

        @Nested
        class Inner {
            @Test
            void seesTheEnclosingClassesToo() {
                SEEN.add(BootTestProperties.of(Inner.class));
            }
        }
    }

    @ExtendWith(EmbeddedArtemisExtension.class)
    static class Declared {
        @Test
        void seesTheBroker() {
            SEEN.add(BootTestProperties.of(Declared.class));
        }
    }

    static class Plain {
    }

    @Test
    void theClassesExtensionsGiveTheBrokerAndDatabasePropertiesWhileItsTestsRun() {
        SEEN.clear();
        EXPECTED.clear();
        Fixtures.run(BrokerAndSchema.class).assertStatistics(s -> s.started(2).succeeded(2));
        assertThat(SEEN).hasSize(2);
        for (Map<String, String> p : SEEN) {
            assertThat(p).containsEntry("acemq.connection.host", "127.0.0.1")
                    .containsEntry("acemq.connection.port", EXPECTED.get(0))
                    .containsEntry("acemq.connection.username", "app")
                    .containsEntry("acemq.connection.password", "pw")
                    .containsEntry("spring.datasource.url", EXPECTED.get(1));
        }
        assertThat(BootTestProperties.of(BrokerAndSchema.class)).as("after the class").isEmpty();
        assertThat(BootTestProperties.isActive(BrokerAndSchema.class)).isFalse();

        SEEN.clear();
        Fixtures.run(Declared.class).assertStatistics(s -> s.started(1).succeeded(1));
        assertThat(SEEN.get(0)).containsOnlyKeys("acemq.connection.host", "acemq.connection.port");
    }

    @Test
    void theFactoryActsOnClassesThatDeclareTheExtensions() {
        AcemqTestContextCustomizerFactory factory = new AcemqTestContextCustomizerFactory();
        assertThat(factory.createContextCustomizer(BrokerAndSchema.class, List.of())).isNotNull();
        assertThat(factory.createContextCustomizer(BrokerAndSchema.Inner.class, List.of())).isNotNull();
        assertThat(factory.createContextCustomizer(Declared.class, List.of())).isNotNull();
        assertThat(factory.createContextCustomizer(Plain.class, List.of())).isNull();
        assertThat(factory.createContextCustomizer(Declared.class, List.of()))
                .as("equal per test class: Spring caches the context by it")
                .isEqualTo(factory.createContextCustomizer(Declared.class, List.of()))
                .isNotEqualTo(factory.createContextCustomizer(BrokerAndSchema.class, List.of()));

        ContextCustomizer early = factory.createContextCustomizer(Declared.class, List.of());
        try (GenericApplicationContext context = new GenericApplicationContext()) {
            assertThatThrownBy(() -> early.customizeContext(context, null))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("but none has started for it when Spring loads its application context")
                    .hasMessageContaining("@TestInstance(PER_CLASS)");
        }
    }
}
