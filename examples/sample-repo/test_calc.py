import os
import unittest

import calc


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(calc.add(2, 3), 5)

    def test_mean(self):
        self.assertEqual(calc.mean([1, 2, 3]), 2)

    def test_sandbox_cannot_write_workspace(self):
        # The default profile mounts the workspace read-only.
        with self.assertRaises(OSError):
            with open("written-by-sandbox.txt", "w") as f:
                f.write("escaped")

    def test_no_network(self):
        import socket
        names = {name for _, name in socket.if_nameindex()}
        self.assertEqual(names, {"lo"})

    def test_host_environment_absent(self):
        self.assertNotIn("CFH_ARTIFACT_ROOT", os.environ)


if __name__ == "__main__":
    unittest.main()
