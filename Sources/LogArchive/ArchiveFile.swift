import Crypto
import Glibc

/// A file of an archive, opened for writing (created new) or for reading, by its descriptor:
/// writes are complete or throw, and `flush` reaches the disk (`fsync`).
final class ArchiveFile {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let descriptor: Int32
    let path: String

    /// Creates `path`, which must not exist.
    static func create(_ path: String) throws -> ArchiveFile {
        try ArchiveFile(path: path, flags: O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC)
    }

    static func open(_ path: String) throws -> ArchiveFile {
        try ArchiveFile(path: path, flags: O_RDONLY | O_CLOEXEC)
    }

    private init(path: String, flags: Int32) throws {
        let descriptor = Glibc.open(path, flags, 0o644)
        guard descriptor >= 0 else { throw Self.failure("cannot open \(path)") }
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw Self.failure("cannot write \(path)")
            }
            offset += written
        }
    }

    /// Reads up to `buffer.count` bytes into `buffer`; 0 at the end of the file.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let read = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if read >= 0 { return read }
            if errno != EINTR { throw Self.failure("cannot read \(path)") }
        }
    }

    /// Waits until what was written is on the disk.
    func flush() throws {
        guard fsync(descriptor) == 0 else { throw Self.failure("cannot flush \(path) to disk") }
    }

    /// Flushes a folder to disk, so that the names created or renamed in it last.
    static func flushFolder(_ path: String) throws {
        let folder = try ArchiveFile(path: path, flags: O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try folder.flush()
    }

    private static func failure(_ what: String) -> Failure {
        Failure(description: "\(what): \(String(cString: strerror(errno)))")
    }
}

extension SHA256.Digest {
    var hex: String { map { String($0, radix: 16).leftPadded(to: 2) }.joined() }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
