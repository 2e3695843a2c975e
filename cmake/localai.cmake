# pagoda-localai: the LocalAI backend (src/localai, apps/pagoda-localai, proto/localai/backend.proto).
# Sets PAGODA_HAVE_LOCALAI when it is built. Targets:
#   pagoda_localai_proto  the C++ of backend.proto (messages: libprotobuf; the service: grpc++)
#   pagoda_localai        src/localai: the request conversion and the gRPC service, over pagoda_core
#   pagoda-localai        the binary LocalAI starts (`--addr HOST:PORT`)
set(PAGODA_HAVE_LOCALAI OFF)
if(PAGODA_LOCALAI STREQUAL "OFF")
  return()
endif()
if(NOT PAGODA_LOCALAI MATCHES "^(AUTO|ON)$")
  message(FATAL_ERROR "PAGODA_LOCALAI must be AUTO, ON or OFF (got '${PAGODA_LOCALAI}')")
endif()
find_package(Protobuf QUIET)
find_package(gRPC CONFIG QUIET)  # Debian's libgrpc-dev; needs protobuf-compiler-grpc (the plugin) installed too
if(NOT Protobuf_FOUND OR NOT gRPC_FOUND OR NOT TARGET gRPC::grpc_cpp_plugin OR NOT Protobuf_PROTOC_EXECUTABLE)
  if(PAGODA_LOCALAI STREQUAL "ON")
    message(FATAL_ERROR "PAGODA_LOCALAI=ON needs gRPC C++ and protobuf (Debian: libgrpc++-dev protobuf-compiler-grpc "
                        "libprotobuf-dev protobuf-compiler)")
  endif()
  message(STATUS "pagoda-localai: not built (gRPC C++ or protobuf not found; PAGODA_LOCALAI=AUTO)")
  return()
endif()
set(PAGODA_HAVE_LOCALAI ON)
message(STATUS "pagoda-localai: built (gRPC ${gRPC_VERSION}, protobuf ${Protobuf_VERSION})")

set(LOCALAI_PROTO ${CMAKE_SOURCE_DIR}/proto/localai/backend.proto)
set(LOCALAI_GEN ${CMAKE_BINARY_DIR}/generated/localai)
set(LOCALAI_GEN_SOURCES ${LOCALAI_GEN}/backend.pb.cc ${LOCALAI_GEN}/backend.grpc.pb.cc)
add_custom_command(
  OUTPUT ${LOCALAI_GEN_SOURCES} ${LOCALAI_GEN}/backend.pb.h ${LOCALAI_GEN}/backend.grpc.pb.h
  COMMAND ${CMAKE_COMMAND} -E make_directory ${LOCALAI_GEN}
  COMMAND ${Protobuf_PROTOC_EXECUTABLE} --proto_path=${CMAKE_SOURCE_DIR}/proto/localai --cpp_out=${LOCALAI_GEN}
          --grpc_out=${LOCALAI_GEN} --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin> ${LOCALAI_PROTO}
  DEPENDS ${LOCALAI_PROTO}
  COMMENT "protoc: proto/localai/backend.proto")
add_library(pagoda_localai_proto STATIC ${LOCALAI_GEN_SOURCES})
# Generated code: none of pagoda's warnings apply.
set_source_files_properties(${LOCALAI_GEN_SOURCES} PROPERTIES COMPILE_OPTIONS "-w")
# Nor do the sanitizers: in the sanitizer tree protoc's output is compiled without them (51 s of that tree's compile
# time on a 2-core Zen 3); pagoda's code on both sides of it keeps them.
if(PAGODA_SANITIZE OR PAGODA_FUZZ)
  set_property(SOURCE ${LOCALAI_GEN_SOURCES} APPEND PROPERTY COMPILE_OPTIONS
               ${PAGODA_NO_SANITIZE_FLAGS})
endif()
target_include_directories(pagoda_localai_proto SYSTEM PUBLIC ${LOCALAI_GEN})
target_link_libraries(pagoda_localai_proto PUBLIC protobuf::libprotobuf gRPC::grpc++)

file(GLOB PAGODA_LOCALAI_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/localai/*.cpp)
add_library(pagoda_localai STATIC ${PAGODA_LOCALAI_SOURCES})
target_link_libraries(pagoda_localai PUBLIC pagoda_core pagoda_localai_proto)
pagoda_unity_by_directory(pagoda_localai)

# The binary reuses `pagoda serve`'s engine and chat-template flags (apps/pagoda) for ModelOptions.Options.
add_executable(pagoda-localai ${CMAKE_SOURCE_DIR}/apps/pagoda-localai/main.cpp
               ${CMAKE_SOURCE_DIR}/apps/pagoda-localai/model_loader.cpp
               ${CMAKE_SOURCE_DIR}/apps/pagoda/engine_flags.cpp ${CMAKE_SOURCE_DIR}/apps/pagoda/chat_template_flags.cpp
               ${CMAKE_SOURCE_DIR}/apps/pagoda/cli_util.cpp)
target_include_directories(pagoda-localai PRIVATE ${CMAKE_SOURCE_DIR}/apps/pagoda ${CMAKE_SOURCE_DIR}/apps/pagoda-localai)
target_link_libraries(pagoda-localai PRIVATE pagoda_localai CLI11::CLI11)
pagoda_unity_by_directory(pagoda-localai)
