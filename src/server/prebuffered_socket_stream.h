// The httplib::Stream a worker serves one request through, after the connection front (server/connection_front.h)
// has read the whole request into memory: reads come from that buffer only (never from the socket, so a worker
// never waits for a client's bytes), writes go to the socket with a deadline per write.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>

namespace pagoda {

class PrebufferedSocketStream : public httplib::Stream {
 public:
  // fd: the connection (non-blocking); bytes: the request (and possibly the start of the next one).
  // drop_continue: the front already sent "100 Continue", so the library's own is not written again.
  PrebufferedSocketStream(int fd, std::string bytes, std::chrono::milliseconds write_timeout, bool drop_continue);

  bool is_readable() const override { return pos_ < bytes_.size(); }
  // Writable within the write timeout, and the peer has not closed the connection.
  bool is_writable() const override;
  // From the buffer; 0 (end of stream) once it is used up.
  ssize_t read(char* ptr, size_t size) override;
  // All of it, or -1 when the socket fails or accepts nothing for write_timeout.
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

  size_t consumed() const { return pos_; }
  std::string unconsumed() const { return bytes_.substr(pos_); }
  bool write_failed() const { return write_failed_; }

 private:
  int fd_;
  std::string bytes_;
  size_t pos_ = 0;
  std::chrono::milliseconds write_timeout_;
  bool drop_continue_;
  bool write_failed_ = false;
};

// httplib::Server with its request processing reachable for a stream the caller made (process_request is
// protected): routing, handlers, error and exception handlers stay the library's.
class FramedHttpServer : public httplib::Server {
 public:
  // Serves the one request at the start of `stream`. close_connection: answer with "Connection: close".
  // connection_closed: the response closed the connection (the client asked, or an error).
  bool serve(httplib::Stream& stream, bool close_connection, bool& connection_closed) {
    return process_request(stream, close_connection, connection_closed, nullptr);
  }
};

}  // namespace pagoda
