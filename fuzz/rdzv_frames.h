// For the rendezvous fuzz targets: the input fed to a FrameReader in two parts
// (partial frames), each complete frame that decodes as a Message handed to
// `on_message`. One loop for frame_fuzz, client_message_fuzz, host_message_fuzz.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rendezvous/frame.h"
#include "rendezvous/messages.h"

namespace elastic {

template <typename OnMessage>
void ForEachFuzzedMessage(const uint8_t* data, size_t size, OnMessage on_message) {
  FrameReader reader(4096);
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  size_t half = size / 2;
  reader.Feed(bytes.substr(0, half));
  for (int pass = 0; pass < 2; ++pass) {
    std::string payload, err;
    while (reader.Next(&payload, &err) == FrameReader::Result::kFrame) {
      Message msg;
      if (DecodeMessage(payload, &msg, &err)) on_message(msg);
    }
    if (pass == 0) reader.Feed(bytes.substr(half));
  }
}

}  // namespace elastic
