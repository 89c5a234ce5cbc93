package org.acemq.amqp.testsupport.spring;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.List;
import java.util.Map;
import org.acemq.amqp.testsupport.BootTestProperties;
import org.acemq.amqp.testsupport.EmbeddedArtemisExtension;
import org.acemq.amqp.testsupport.PostgresExtension;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.annotation.MergedAnnotation;
import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.MutablePropertySources;
import org.springframework.test.context.ContextConfigurationAttributes;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.ContextCustomizerFactory;
import org.springframework.test.context.MergedContextConfiguration;

/**
 * Points a Spring test's application at the embedded broker and the PostgreSQL schema of its class's
 * {@link EmbeddedArtemisExtension} and {@link PostgresExtension}: adds {@link BootTestProperties#of(Class)} (the
 * {@code acemq.connection.*} and {@code spring.datasource.*} properties) to the environment, below the test's own
 * inlined properties ({@code @SpringBootTest(properties = ...)}, {@code @TestPropertySource}), which win.
 *
 * <p>Registered in test-support's {@code META-INF/spring.factories}; Spring's test framework loads it when it is on
 * the class path (spring-test is an optional dependency of test-support: projects without Spring never see it). It
 * acts on test classes (or their enclosing classes) with such an extension declared class-level: a {@code static}
 * {@code @RegisterExtension} field, or {@code @ExtendWith}. The extensions start their broker and schema before
 * Spring loads the test's context (JUnit runs every {@code beforeAll} before it creates the test instance, which is
 * when Spring loads the context), so the properties are known by then. Each test class gets a context of its own, as
 * it gets a broker of its own.
 */
public final class AcemqTestContextCustomizerFactory implements ContextCustomizerFactory {

    /** The name of the property source it adds. */
    public static final String PROPERTY_SOURCE_NAME = "acemqTestSupport";

    /** Spring's name for the inlined test properties ({@code TestPropertySourceUtils}), which stay above ours. */
    private static final String INLINED = "Inlined Test Properties";

    @Override
    public ContextCustomizer createContextCustomizer(Class<?> testClass,
            List<ContextConfigurationAttributes> configAttributes) {
        return declaresExtension(testClass) ? new Customizer(testClass) : null;
    }

    /** @return whether the class, a superclass or an enclosing class declares an extension class-level */
    static boolean declaresExtension(Class<?> testClass) {
        for (Class<?> c = testClass; c != null; c = c.getEnclosingClass()) {
            for (Class<?> t = c; t != null && t != Object.class; t = t.getSuperclass()) {
                for (Field f : t.getDeclaredFields()) {
                    if (Modifier.isStatic(f.getModifiers()) && isExtension(f.getType())) {
                        return true;
                    }
                }
            }
            boolean extendedWith = MergedAnnotations.from(c, MergedAnnotations.SearchStrategy.TYPE_HIERARCHY)
                    .stream(ExtendWith.class).map(MergedAnnotation::synthesize)
                    .flatMap(e -> java.util.Arrays.stream(e.value()))
                    .anyMatch(AcemqTestContextCustomizerFactory::isExtension);
            if (extendedWith) {
                return true;
            }
        }
        return false;
    }

    private static boolean isExtension(Class<?> type) {
        return type == EmbeddedArtemisExtension.class || type == PostgresExtension.class;
    }

    /** Adds the properties of one test class's extensions. Equal for one test class: its context is cached. */
    private static final class Customizer implements ContextCustomizer {
        private final Class<?> testClass;

        Customizer(Class<?> testClass) {
            this.testClass = testClass;
        }

        @Override
        public void customizeContext(ConfigurableApplicationContext context, MergedContextConfiguration config) {
            if (!BootTestProperties.isActive(testClass)) {
                throw new IllegalStateException(testClass.getName() + " declares an AceMQ test-support extension "
                        + "(EmbeddedArtemisExtension, PostgresExtension), but none has started for it when Spring "
                        + "loads its application context: declare them class-level (a static @RegisterExtension "
                        + "field, or @ExtendWith), and do not use @TestInstance(PER_CLASS), which makes JUnit create "
                        + "the test instance (and Spring load the context) before the extensions' beforeAll");
            }
            Map<String, String> properties = BootTestProperties.of(testClass);
            MutablePropertySources sources = context.getEnvironment().getPropertySources();
            MapPropertySource source = new MapPropertySource(PROPERTY_SOURCE_NAME, Map.copyOf(properties));
            if (sources.contains(INLINED)) {
                sources.addAfter(INLINED, source);
            } else {
                sources.addFirst(source);
            }
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof Customizer c && c.testClass == testClass;
        }

        @Override
        public int hashCode() {
            return testClass.hashCode();
        }
    }
}
