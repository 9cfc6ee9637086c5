# SriovNetwork → NetworkAttachmentDefinition: the renderer's unit test follows upstream's golden
# files and controller tests, so it is a conformance test too.
set_property(TEST unit/test-nad-render APPEND PROPERTY LABELS conformance)
